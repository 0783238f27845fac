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

    /// The most violations ``description`` lists: a hostile request can
    /// break one rule per map entry, and the `grpc-message` must stay short.
    public static let maximumListed = 10

    /// The violations joined with `; ` — fit for a `grpc-message`: at most
    /// ``maximumListed`` of them, then how many more there are.
    public var description: String {
        let listed = violations.prefix(Self.maximumListed).map(\.description).joined(separator: "; ")
        let more = violations.count - Self.maximumListed
        return more > 0 ? listed + "; and \(more) more" : listed
    }
}
