/// Client input as it may appear in an error message.
///
/// A `grpc-message` travels in an HTTP/2 trailer, and a client can send
/// megabytes in one string field: echoing it whole would make the trailer
/// too large for the client (or for the server's own header limits) and
/// turn a clear INVALID_ARGUMENT into a broken stream. Every message built
/// by the core and the handlers quotes client input through this one helper,
/// so the bound holds everywhere (SPEC §4: "error messages quote client
/// input truncated").
public enum ErrorText {
    /// The most bytes of client input an error message repeats.
    public static let maximumInputBytes = 64

    /// `input` in double quotes, cut after ``maximumInputBytes`` bytes at a
    /// UTF-8 boundary and marked with `…` when cut.
    public static func quote(_ input: some StringProtocol) -> String {
        "\"" + truncated(input) + "\""
    }

    /// `input` cut after ``maximumInputBytes`` bytes at a UTF-8 boundary,
    /// with `…` appended when cut (for field paths, which name map keys).
    public static func truncated(_ input: some StringProtocol) -> String {
        let utf8 = input.utf8
        if utf8.count <= maximumInputBytes { return String(input) }
        var end = utf8.startIndex
        var taken = 0
        for scalar in input.unicodeScalars {
            let width = UTF8.width(scalar)
            if taken + width > maximumInputBytes { break }
            taken += width
            end = utf8.index(end, offsetBy: width)
        }
        return String(decoding: utf8[utf8.startIndex..<end], as: UTF8.self) + "…"
    }
}
