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
        case .suppressed: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPPRESSED
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
