/// One problem with one request field.
public struct FieldViolation: Sendable, Hashable, CustomStringConvertible {
    /// The field path in the API's spelling, e.g. `content.title.translations[de]`.
    public var field: String
    /// Why it is invalid, e.g. `required` or `must be at most 64 bytes, got 70`.
    public var reason: String

    /// Creates a violation.
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    /// `field: reason`.
    public var description: String { "\(field): \(reason)" }
}

/// Every problem found in a request (INVALID_ARGUMENT), in field order.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Never empty.
    public var violations: [FieldViolation]

    /// Creates the error from its violations.
    public init(_ violations: [FieldViolation]) { self.violations = violations }

    /// The violations joined with `; ` — fit for a `grpc-message`.
    public var description: String { violations.map(\.description).joined(separator: "; ") }
}
