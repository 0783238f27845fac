import Foundation
import Synchronization

/// A fresh directory under the system's temporary directory, named
/// `prefix-<uuid>`; the caller removes it (`removeTemporaryDirectory`).
public func makeTemporaryDirectory(prefix: String) throws -> String {
    let path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Removes a directory `makeTemporaryDirectory` made, with what it holds.
public func removeTemporaryDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// A fresh temporary directory, removed after `body`.
public func withTemporaryDirectory<T>(
    prefix: String = "herald-tests", _ body: (String) async throws -> T
) async throws -> T {
    let path = try makeTemporaryDirectory(prefix: prefix)
    defer { removeTemporaryDirectory(path) }
    return try await body(path)
}

/// A flag set on one thread and polled (with `Task.yield`, no sleeping) on another.
public final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    public init() {}

    public func set() { value.store(true, ordering: .releasing) }

    public var isSet: Bool { value.load(ordering: .acquiring) }
}
