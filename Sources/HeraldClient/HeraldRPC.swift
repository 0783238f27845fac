import HeraldProtos

/// The Herald RPCs the client calls: path, request and reply types.
public struct HeraldRPC: Sendable {
    /// `/herald.v1.PushService/Schedule` etc.
    public let path: String
    /// The request message type.
    public let request: ProtoMessage.MessageType
    /// The reply message type (of each message, for a stream).
    public let reply: ProtoMessage.MessageType

    private static func type(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> ProtoMessage.MessageType {
        ProtoMessage.MessageType(descriptor: descriptor)
    }

    private static func push(_ method: String, _ request: UnsafePointer<ProtobufCMessageDescriptor>,
                             _ reply: UnsafePointer<ProtobufCMessageDescriptor>) -> HeraldRPC {
        HeraldRPC(path: "/herald.v1.PushService/\(method)", request: type(request), reply: type(reply))
    }

    /// PushService.Schedule and its siblings below: one per RPC the client calls.
    public static let schedule = push("Schedule", {
        var m = Herald__V1__ScheduleRequest(); herald__v1__schedule_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__ScheduleResponse(); herald__v1__schedule_response__init(&m); return m.base.descriptor }())
    public static let cancel = push("Cancel", {
        var m = Herald__V1__CancelRequest(); herald__v1__cancel_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__CancelResponse(); herald__v1__cancel_response__init(&m); return m.base.descriptor }())
    public static let render = push("Render", {
        var m = Herald__V1__RenderRequest(); herald__v1__render_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__RenderResponse(); herald__v1__render_response__init(&m); return m.base.descriptor }())
    public static let status = push("Status", {
        var m = Herald__V1__StatusRequest(); herald__v1__status_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__StatusResponse(); herald__v1__status_response__init(&m); return m.base.descriptor }())
    public static let getMessage = push("GetMessage", {
        var m = Herald__V1__GetMessageRequest(); herald__v1__get_message_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__GetMessageResponse(); herald__v1__get_message_response__init(&m); return m.base.descriptor }())
    public static let listMessages = push("ListMessages", {
        var m = Herald__V1__ListMessagesRequest(); herald__v1__list_messages_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__ListMessagesResponse(); herald__v1__list_messages_response__init(&m); return m.base.descriptor }())
    public static let campaignReport = push("CampaignReport", {
        var m = Herald__V1__CampaignReportRequest(); herald__v1__campaign_report_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__CampaignReportResponse(); herald__v1__campaign_report_response__init(&m); return m.base.descriptor }())
    public static let streamEvents = push("StreamEvents", {
        var m = Herald__V1__StreamEventsRequest(); herald__v1__stream_events_request__init(&m); return m.base.descriptor }(), {
        var m = Herald__V1__DeliveryEvent(); herald__v1__delivery_event__init(&m); return m.base.descriptor }())
    public static let registerDevice = HeraldRPC(path: "/herald.v1.DeviceService/RegisterDevice", request: type({
        var m = Herald__V1__RegisterDeviceRequest(); herald__v1__register_device_request__init(&m); return m.base.descriptor }()),
        reply: type({ var m = Herald__V1__RegisterDeviceResponse(); herald__v1__register_device_response__init(&m); return m.base.descriptor }()))
    public static let unregisterDevice = HeraldRPC(path: "/herald.v1.DeviceService/UnregisterDevice", request: type({
        var m = Herald__V1__UnregisterDeviceRequest(); herald__v1__unregister_device_request__init(&m); return m.base.descriptor }()),
        reply: type({ var m = Herald__V1__UnregisterDeviceResponse(); herald__v1__unregister_device_response__init(&m); return m.base.descriptor }()))
}
