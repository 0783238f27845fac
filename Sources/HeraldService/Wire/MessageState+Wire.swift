import HeraldCore
import HeraldProtos

extension MessageState {
    /// The `herald.v1.MessageState` wire value.
    var wire: Herald__V1__MessageState {
        switch self {
        case .scheduled: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SCHEDULED
        case .handedOff: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_HANDED_OFF
        case .sent: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SENT
        case .displayed: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_DISPLAYED
        case .cancelled: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_CANCELLED
        case .superseded: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPERSEDED
        case .failed: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_FAILED
        case .expired: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_EXPIRED
        case .noDevices: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_NO_DEVICES
        }
    }
}

extension DeliveryMethod {
    var wire: Herald__V1__DeliveryMethod {
        switch self {
        case .contextAware: HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_CONTEXT_AWARE
        case .traditional: HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_TRADITIONAL
        }
    }
}

extension Herald__V1__ScheduleRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__schedule_request__init(&m); return m }
}
extension Herald__V1__ScheduleResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__schedule_response__init(&m); return m }
}
extension Herald__V1__CancelRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__cancel_request__init(&m); return m }
}
extension Herald__V1__CancelResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__cancel_response__init(&m); return m }
}
extension Herald__V1__ReportEventRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__report_event_request__init(&m); return m }
}
extension Herald__V1__ReportEventResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__report_event_response__init(&m); return m }
}
extension Herald__V1__RegisterDeviceRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__register_device_request__init(&m); return m }
}
extension Herald__V1__RegisterDeviceResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__register_device_response__init(&m); return m }
}
extension Herald__V1__UnregisterDeviceRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__unregister_device_request__init(&m); return m }
}
extension Herald__V1__UnregisterDeviceResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__unregister_device_response__init(&m); return m }
}
