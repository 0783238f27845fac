import GRPCEngine

/// The gRPC engine's one observer: RPC metrics (the engine's tally) and the access log.
struct RPCObserver: GRPCCallObserver {
    let metrics: RPCMetricsTable
    let accessLog: AccessLog?

    var annotatesRequests: Bool { accessLog != nil }
    /// The RPC metrics are the engine's tally, folded in at scrape time.
    var tally: GRPCCallTally? { metrics.tally }
    /// Only the access log wants each call.
    var observesEachCall: Bool { accessLog != nil }

    /// The bundle a Herald request names (field 1 of every request of
    /// `herald.v1`); nil for Health, Status, reflection and unreadable bytes.
    func annotate(_ request: GRPCRequest) -> String? {
        guard request.path.hasPrefix("/herald.v1."), request.path != StatusService.path else { return nil }
        return BundleField.extract(request.message)
    }

    func callFinished(_ call: GRPCFinishedCall) {
        accessLog?.record(call, method: metrics.methodName(call.method))
    }
}

/// Reads field 1 (length-delimited) of a protobuf message without decoding
/// the rest: a bounded walk over the top-level fields.
enum BundleField {
    /// Longest bundle id reported; longer (or non-UTF-8) values are not.
    static let maxBytes = 256

    static func extract(_ bytes: [UInt8]) -> String? {
        var index = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while index < bytes.count {
            guard let key = varint() else { return nil }
            let field = key >> 3
            switch key & 7 {
            case 0:
                guard varint() != nil else { return nil }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let length = varint(), length <= UInt64(bytes.count - index) else { return nil }
                let end = index + Int(length)
                if field == 1 {
                    guard length <= UInt64(maxBytes) else { return nil }
                    return String(validating: bytes[index..<end], as: UTF8.self)
                }
                index = end
            default:
                return nil
            }
        }
        return nil
    }
}
