import HeraldPrimitives

/// The fuzz targets, as plain functions of the input bytes.
///
/// A target returns normally for every input the server would answer
/// (rejections included); a finding is a crash, a failed property check
/// (`precondition`), a sanitizer report, or an input slow enough to trip
/// libFuzzer's `-timeout` (the point of "bounded under hostile input").
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// gRPC length-prefixed framing as DATA frames deliver it, plus gzip.
    case deframer
    /// Every RPC's request decoding and validation (first byte picks the RPC).
    case requests
    /// The JSON parser and the parse → write → parse round trip.
    case json
    /// The TZif (time zone file) reader and the conversions on what it reads.
    case tzif
    /// Connect JSON bodies through the proto3 JSON mapping (first byte picks the method).
    case connectjson

    public func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        switch self {
        case .deframer: DeframerTarget.run(bytes)
        case .requests: RequestsTarget.run(bytes)
        case .json: JSONTarget.run(bytes)
        case .tzif: TZifTarget.run(bytes)
        case .connectjson: ConnectJSONTarget.run(bytes)
        }
    }

    public func run(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { run($0) }
    }

    /// The path of every route the `requests` target reaches, in selector
    /// order: an input whose first byte is `i` goes to `requestRoutes[i]`.
    public static var requestRoutes: [String] { RequestsTarget.paths }

    /// Every method the server serves: herald.v1's read from the generated
    /// service descriptors (a new RPC appears here by itself), Health's and
    /// reflection's by name.
    public static var declaredRoutes: [String] { RequestsTarget.declaredPaths }

    /// How the server would answer a `requests` input ("ok" or the error),
    /// to check that seeds get past validation; nil for other targets.
    public func answer(_ bytes: [UInt8]) -> String? {
        guard self == .requests else { return nil }
        return RequestsTarget.answer(bytes)
    }
}
