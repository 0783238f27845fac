/// Why a JSON body is not a message of the type it is read as (the proto3
/// JSON mapping): the field's path in the JSON's spelling and the reason.
public struct ProtoJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The member path, e.g. `content.title` or `userIds[2]` ("" for the body itself).
    public var field: String
    /// What is wrong with it.
    public var reason: String

    /// An error at `field`.
    public init(_ field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { field.isEmpty ? reason : "\(field): \(reason)" }
}
