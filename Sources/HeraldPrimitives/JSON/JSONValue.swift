/// A JSON object's members, sorted by key (see ``SortedMap``).
public typealias JSONObject = SortedMap<JSONValue>

/// A JSON value, mirroring `google.protobuf.Value` / `google.protobuf.Struct`.
///
/// Objects are maps, as in `Struct`, kept sorted by key (``JSONObject``):
/// ``JSONWriter`` writes their keys in that order, ascending bytes of their
/// UTF-8 form, so output is deterministic.
/// Numbers are `Double`s, as in `google.protobuf.Value.number_value`; NaN and
/// infinities are not JSON and are rejected by validation and by the writer.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The members when this is an object.
    @inlinable public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The string when this is a string.
    @inlinable public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number when this is a number.
    @inlinable public var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The Boolean when this is a Boolean.
    @inlinable public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements when this is an array.
    @inlinable public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// Looks up a key when this is an object.
    @inlinable public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// Whether a NaN or infinite number occurs anywhere in the value.
    public var containsNonFiniteNumber: Bool {
        switch self {
        case .number(let n): return !n.isFinite
        case .array(let a):
            for v in a where v.mayContainNumber && v.containsNonFiniteNumber { return true }
            return false
        case .object(let o):
            for (_, v) in o where v.mayContainNumber && v.containsNonFiniteNumber { return true }
            return false
        default: return false
        }
    }

    /// False for strings, Booleans and null (no need to look inside).
    @inlinable @inline(__always)
    public var mayContainNumber: Bool {
        switch self {
        case .number, .array, .object: return true
        default: return false
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON (sorted keys); `"<invalid: NaN>"`-style text never
    /// appears because non-finite numbers are written as `null` here.
    public var description: String {
        var w = JSONWriter()
        w.writeLenient(self)
        return w.string
    }
}

extension JSONValue {
    /// A JSON number as Int64 the way `NSNumber.int64Value` read it
    /// (truncated toward zero); nil when out of range or not finite.
    public static func integer(fromNumber number: Double) -> Int64? {
        guard number.isFinite, number > -9.3e18, number < 9.3e18 else { return nil }
        return Int64(number.rounded(.towardZero))
    }
}
