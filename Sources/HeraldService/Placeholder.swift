// Placeholder: replaced as the HeraldService target grows.
import CInterop
import HeraldProtos

func scheduleRequestMessageName() -> String {
    withUnsafePointer(to: herald__v1__schedule_request__descriptor) { String(cString: $0.pointee.name) }
}
