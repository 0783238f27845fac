/// Object keys in writing order: ascending UTF-8 bytes, the order a
/// ``JSONObject`` keeps them in.
extension JSONWriter {
    /// The order in which object keys are written: ascending UTF-8 bytes.
    @inlinable @inline(__always)
    public static func keyOrder(_ a: String, _ b: String) -> Bool {
        JSONObject.keyOrder(a, b)
    }
}
