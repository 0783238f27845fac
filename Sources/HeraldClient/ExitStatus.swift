public import GRPCEngine

/// The exit statuses of the client subcommands: one table, printed by
/// `herald <subcommand> --help` and docs/CLIENT.md.
///
/// 0 is OK; 1 a local problem (a flag's value, an unreadable file); 64 a
/// usage error (ArgumentParser's); and a call that ends with gRPC status
/// code N (1 to 16) exits with 10 + N, e.g. 13 INVALID_ARGUMENT, 15
/// NOT_FOUND, 24 UNAVAILABLE (also: no server at the address, TLS failed),
/// 26 UNAUTHENTICATED.
public enum ExitStatus {
    /// The exit status for a call that ended with `code`.
    public static func forFailure(_ code: GRPCStatus.Code) -> Int32 {
        if code == .ok { return 1 }
        guard (1...16).contains(code.rawValue) else { return 12 }  // as UNKNOWN
        return Int32(10 + code.rawValue)
    }

    /// The table as help text, one status a line.
    public static var table: String {
        var lines = ["  0   OK", "  1   a local problem (a flag's value, an unreadable file)",
                     " 64   usage error (unknown flag, missing value)"]
        for raw in 1...16 {
            let code = GRPCStatus.Code(rawValue: raw)
            let padded = String(repeating: " ", count: 3 - String(10 + raw).count) + "\(10 + raw)"
            lines.append("\(padded)   \(code.name)")
        }
        return lines.joined(separator: "\n")
    }
}
