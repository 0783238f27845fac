public import HeraldPrimitives

/// The adapter as the pool's non-generic core holds it, made once per pool:
/// the response header a stream keeps and the credential a stream starts
/// with. Built by ``HTTP2ClientPool``'s inlinable initializer, so the
/// credential closure is compiled (specialized) in the adapter's module; the
/// slots, connections and requests behind it are not generic, and no
/// `Foo<Adapter>` type is instantiated at run time per request.
@usableFromInline
package struct HTTP2ErasedAdapter: Sendable {
    /// ``HTTP2ClientAdapter/keptHeader``.
    @usableFromInline package let keptHeader: StaticString
    /// ``HTTP2ClientAdapter/keptHeaderMaximumBytes``.
    @usableFromInline package let keptHeaderMaximumBytes: Int
    /// The credential (and its header) for a stream starting now; nil when
    /// the request carries its own.
    @usableFromInline package let credential: @Sendable (Timestamp) throws(HTTP2ClientError) -> HTTP2StreamCredential?

    /// Erases `adapter` (called once per pool, in the adapter's module).
    @inlinable
    package init<Adapter: HTTP2ClientAdapter>(_ adapter: Adapter) {
        keptHeader = Adapter.keptHeader
        keptHeaderMaximumBytes = Adapter.keptHeaderMaximumBytes
        credential = { now throws(HTTP2ClientError) in
            guard let credential = try adapter.credential(now: now) else { return nil }
            return HTTP2StreamCredential(header: adapter.header(for: credential), value: credential)
        }
    }
}

/// A stream's credential: the header it goes out with, and the adapter's
/// value, kept with the stream (type-erased) so the answer can retire it.
@usableFromInline
package struct HTTP2StreamCredential: Sendable {
    @usableFromInline package let header: (name: String, value: String)
    @usableFromInline package let value: any Sendable

    /// A credential and the header that carries it.
    @inlinable
    package init(header: (name: String, value: String), value: any Sendable) {
        self.header = header
        self.value = value
    }
}

/// How one request ended, handed to its completion on the slot's loop.
@usableFromInline
package enum HTTP2RequestOutcome: Sendable {
    /// Answered: the answer and the credential its stream went out with.
    case answered(HTTP2ClientAnswer, credential: (any Sendable)?)
    /// Not answered (connection, stream, deadline, cancellation, shutdown).
    case failed(HTTP2ClientError)
}
