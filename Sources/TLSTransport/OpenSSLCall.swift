import CInterop

/// Checked OpenSSL calls: one place that runs a call, compares its result and
/// reads the error queue at once. The queue is per thread and the next
/// OpenSSL call may add to or clear it, so a failure is described before
/// anything else runs; a call whose result is dropped would let a failed
/// set-up (a peer-name check, a CA) pass silently.
enum OpenSSLCall {
    /// Runs `body`; unless it returns `success`, throws `kind` naming `call`
    /// with the error queue read right after the call.
    @discardableResult
    static func check<R: BinaryInteger>(
        _ call: StaticString, _ kind: TLSError.Kind = .configuration, success: R = 1, _ body: () -> R
    ) throws(TLSError) -> R {
        ERR_clear_error()
        let result = body()
        guard result == success else { throw TLSError(kind, "\(call) failed: \(TLSError.openSSLErrors())") }
        return result
    }

    /// Runs `body`; a nil pointer throws `kind` naming `call` with the error
    /// queue read right after the call.
    static func nonNil<P>(_ call: StaticString, _ kind: TLSError.Kind = .configuration, _ body: () -> P?) throws(TLSError) -> P {
        ERR_clear_error()
        guard let pointer = body() else { throw TLSError(kind, "\(call) failed: \(TLSError.openSSLErrors())") }
        return pointer
    }
}
