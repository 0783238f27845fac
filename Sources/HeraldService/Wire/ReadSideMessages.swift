import HeraldProtos

// GeneratedMessage conformances of read_side.proto's messages (kept apart so
// a generator of these conformances can replace this file).

extension Herald__V1__GetMessageRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__get_message_request__init(&m); return m }
}
extension Herald__V1__GetMessageResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__get_message_response__init(&m); return m }
}
extension Herald__V1__MessageSummary: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__message_summary__init(&m); return m }
}
extension Herald__V1__TimelineEntry: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__timeline_entry__init(&m); return m }
}
extension Herald__V1__DeviceDelivery: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__device_delivery__init(&m); return m }
}
extension Herald__V1__ListMessagesRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__list_messages_request__init(&m); return m }
}
extension Herald__V1__ListMessagesResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__list_messages_response__init(&m); return m }
}
extension Herald__V1__CampaignReportRequest: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__campaign_report_request__init(&m); return m }
}
extension Herald__V1__CampaignReportResponse: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__campaign_report_response__init(&m); return m }
}
extension Herald__V1__CampaignCohortReport: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__campaign_cohort_report__init(&m); return m }
}
extension Herald__V1__AbComparison: GeneratedMessage {
    static func initialized() -> Self { var m = Self(); herald__v1__ab_comparison__init(&m); return m }
}
