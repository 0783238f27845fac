// Placeholder: replaced as the HeraldService target grows.
import CInterop
import HeraldProtos

let scheduleRequestDescriptor = herald__v1__schedule_request__descriptor
let nghttp2Version = NGHTTP2_VERSION_NUM
