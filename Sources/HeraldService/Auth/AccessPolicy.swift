import CInterop
public import GRPCEngine
import HeraldCore
import Synchronization

/// Who may call what: `authorization: Token <token>` metadata, each
/// configured token allowing a list of bundle ids (`*` for all).
///
/// Tokens are compared in constant time: both sides are hashed with SHA-256
/// and every configured digest is compared in full, so neither the length
/// nor the position of a mismatch shows in the timing. Tokens are never
/// logged; a caller is named by its token's label.
public struct AccessPolicy: Sendable {
    /// One configured token.
    public struct Grant: Sendable {
        /// A name for logs (never the token itself).
        public var label: String
        /// Bundle ids this token may act on; `["*"]` means every bundle.
        public var bundleIDs: Set<String>
        fileprivate var digest: [UInt8]

        public init(label: String, token: String, bundleIDs: Set<String>) {
            self.label = label
            self.bundleIDs = bundleIDs
            digest = AccessPolicy.sha256(token)
        }

        public func allows(bundleID: String) -> Bool {
            bundleIDs.contains("*") || bundleIDs.contains(bundleID)
        }
    }

    /// Shared by every copy of this policy (the handlers and admission
    /// checks hold copies), so `replaceGrants` reaches them all at once.
    private final class Store: Sendable {
        let grants: Mutex<[Grant]>
        init(_ grants: [Grant]) { self.grants = Mutex(grants) }
    }

    private let store: Store
    /// Fixed at start: a reload never opens a closed policy (or closes an open one).
    public let isOpen: Bool

    /// The grants in force now.
    public var grants: [Grant] { store.grants.withLock { $0 } }

    /// With no grants, every caller is allowed: the server then listens on
    /// loopback only (see `HeraldServer.start`).
    public init(grants: [Grant] = []) {
        store = Store(grants)
        isOpen = grants.isEmpty
    }

    /// Swaps in `grants` for every copy of this policy at once (SIGHUP): a
    /// call authenticated before keeps its grant, the next one sees the new
    /// list. Refused (false) when it would open a closed policy or close an
    /// open one.
    @discardableResult
    public func replaceGrants(_ grants: [Grant]) -> Bool {
        guard grants.isEmpty == isOpen else { return false }
        store.grants.withLock { $0 = grants }
        return true
    }

    /// The grant the request's token matches; nil when the policy is open.
    ///
    /// - Throws: UNAUTHENTICATED when the token is missing, malformed or unknown.
    public func authenticate(_ metadata: GRPCMetadata) throws -> Grant? {
        guard !isOpen else { return nil }
        guard let header = metadata["authorization"] else {
            throw GRPCStatus(.unauthenticated, "missing authorization metadata (expected \"Token <token>\")")
        }
        let scheme = "token "
        guard header.count > scheme.count, header.prefix(scheme.count).lowercased() == scheme else {
            throw GRPCStatus(.unauthenticated, "authorization metadata must be \"Token <token>\"")
        }
        let presented = Self.sha256(String(header.dropFirst(scheme.count)))
        var match: Grant?
        for grant in store.grants.withLock({ $0 }) where Self.constantTimeEqual(grant.digest, presented) && match == nil {
            match = grant
        }
        guard let match else { throw GRPCStatus(.unauthenticated, "unknown token") }
        return match
    }

    /// The header-time check for the gRPC server: UNAUTHENTICATED before a
    /// byte of the body is buffered; nil (no check) when the policy is open.
    /// The bundle is checked by the handler, once the body is decoded.
    public var admission: GRPCAdmission? {
        guard !isOpen else { return nil }
        return { metadata in
            do {
                _ = try self.authenticate(metadata)
                return nil
            } catch let status as GRPCStatus {
                return status
            } catch {
                return GRPCStatus(.unauthenticated, "authorization could not be checked")
            }
        }
    }

    /// Checks that the caller may act on `bundleID`.
    ///
    /// - Throws: UNAUTHENTICATED as `authenticate`, PERMISSION_DENIED when
    ///   the token does not allow the bundle.
    public func authorize(_ metadata: GRPCMetadata, bundleID: String) throws {
        try authorize(authenticate(metadata), bundleID: bundleID)
    }

    /// Checks an already authenticated caller (nil: open policy).
    public func authorize(_ grant: Grant?, bundleID: String) throws {
        guard let grant else { return }
        guard grant.allows(bundleID: bundleID) else {
            throw GRPCStatus(.permissionDenied, "token \"\(grant.label)\" may not act on bundle_id \(ErrorText.quote(bundleID))")
        }
    }

    /// What a reload changes, by label (never a token): labels added,
    /// removed, and kept with a new token or other bundles.
    public static func changes(from old: [Grant], to new: [Grant]) -> (added: [String], removed: [String], changed: [String]) {
        let before = Dictionary(old.map { ($0.label, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.map { ($0.label, $0) }, uniquingKeysWith: { first, _ in first })
        let added = after.keys.filter { before[$0] == nil }.sorted()
        let removed = before.keys.filter { after[$0] == nil }.sorted()
        let changed = after.compactMap { label, grant -> String? in
            guard let previous = before[label] else { return nil }
            return previous.digest == grant.digest && previous.bundleIDs == grant.bundleIDs ? nil : label
        }.sorted()
        return (added, removed, changed)
    }

    static func sha256(_ text: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBufferPointer { SHA256($0.baseAddress, $0.count, &digest) }
        return digest
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
