import HeraldPrimitives
/// A console request's page and query, decoded and checked before any page
/// code sees it. Refused (``ConsoleRefusal``, 400) rather than guessed at:
/// bad percent-escapes, bytes that are not UTF-8, NUL, a repeated or
/// over-long parameter, too many parameters. Paths are matched exactly
/// (never mapped to files), so `..` and encoded slashes are simply unknown
/// pages.
struct ConsoleRequest: Sendable, Equatable {
    enum Page: String, Sendable {
        case overview, campaigns, message, messages, events
    }

    static let maxParameters = 16
    /// Longer than any id Herald accepts; each page checks its own limits.
    static let maxValueBytes = 1024
    static let maxNameBytes = 32

    var page: Page
    var query: [String: String]

    /// nil: not a console path (the admin listener answers 404 as before).
    static func parse(uri: String) throws(ConsoleRefusal) -> ConsoleRequest? {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        let page: Page
        switch path {
        case "/", "/console", "/console/": page = .overview
        case "/console/campaigns": page = .campaigns
        case "/console/message": page = .message
        case "/console/messages": page = .messages
        case "/console/events": page = .events
        default: return nil
        }
        var query: [String: String] = [:]
        if parts.count == 2 {
            let pairs = parts[1].split(separator: "&", omittingEmptySubsequences: true)
            guard pairs.count <= maxParameters else {
                throw ConsoleRefusal(.badRequest, "too many query parameters (\(pairs.count); the limit is \(maxParameters))")
            }
            for pair in pairs {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = try decode(kv[0], what: "a parameter name")
                guard name.utf8.count <= maxNameBytes else {
                    throw ConsoleRefusal(.badRequest, "a parameter name is \(name.utf8.count) bytes; the limit is \(maxNameBytes)")
                }
                let value = kv.count == 2 ? try decode(kv[1], what: "parameter \(name)") : ""
                guard value.utf8.count <= maxValueBytes else {
                    throw ConsoleRefusal(.badRequest, "parameter \(name) is \(value.utf8.count) bytes; the limit is \(maxValueBytes)")
                }
                guard query[name] == nil else { throw ConsoleRefusal(.badRequest, "parameter \(name) is given twice") }
                query[name] = value
            }
        }
        return ConsoleRequest(page: page, query: query)
    }

    /// A non-empty parameter, trimmed of surrounding spaces; nil when absent or blank.
    func value(_ name: String) -> String? {
        guard let raw = query[name] else { return nil }
        let trimmed = raw.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    /// Percent-decodes (`+` is a space) into UTF-8 text without NUL.
    static func decode(_ text: Substring, what: String) throws(ConsoleRefusal) -> String {
        guard let bytes = PercentDecoding.bytes(text.utf8, plusIsSpace: true) else {
            throw ConsoleRefusal(.badRequest, "\(what) has a malformed percent-escape")
        }
        guard !bytes.contains(0) else { throw ConsoleRefusal(.badRequest, "\(what) contains NUL") }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw ConsoleRefusal(.badRequest, "\(what) is not valid UTF-8")
        }
        return decoded
    }
}

/// A console request refused, with the HTTP status and a sentence for the page.
struct ConsoleRefusal: Error, Sendable, Equatable {
    enum Status: Int, Sendable {
        case badRequest = 400
        case unauthorized = 401
        case forbidden = 403
        case notFound = 404
        case methodNotAllowed = 405
        case tooManyRequests = 429
        case internalError = 500
        case unavailable = 503
    }

    var status: Status
    var message: String

    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }
}
