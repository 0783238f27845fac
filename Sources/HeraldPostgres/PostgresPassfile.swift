import HeraldPrimitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A libpq password file (`passfile=FILE` in the URL, or `PGPASSFILE`), so
/// the password need not travel in `--store` (which `ps` shows).
///
/// The format is libpq's: one `hostname:port:database:username:password`
/// per line; `*` in any of the first four fields matches anything; `\:` and
/// `\\` escape a colon and a backslash; lines starting with `#` are
/// comments; the first matching line wins. A unix socket connection
/// matches the hostname `localhost`, as in libpq.
///
/// Like libpq, the file must be a regular file that neither group nor
/// others may read or write (0600 or stricter); any other is refused,
/// naming the file.
enum PostgresPassfile {
    /// The password of the first line matching (host, port, database,
    /// user), nil when none matches.
    static func password(
        path: String, host: String, port: Int, database: String, user: String
    ) throws(PostgresURLError) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw PostgresURLError("passfile \(path) cannot be read: \(String(cString: strerror(code)))")
        }
        guard (info.st_mode & 0o170_000) == 0o100_000 else {  // S_IFMT, S_IFREG
            throw PostgresURLError("passfile \(path) is not a regular file")
        }
        if info.st_mode & 0o077 != 0 {  // S_IRWXG | S_IRWXO
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw PostgresURLError("passfile \(path) is readable or writable by group or others (mode \(mode)); chmod 600 it")
        }
        let text: String
        do { text = try POSIXFile.readText(path) } catch {
            throw PostgresURLError("passfile \(path) cannot be read: \(error)")
        }
        return match(text, host: host, port: port, database: database, user: user)
    }

    /// The password of `text`'s first line matching, nil when none does.
    static func match(_ text: String, host: String, port: Int, database: String, user: String) -> String? {
        let wanted = [host, String(port), database, user]
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = split(line)
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0.0 == "*" || $0.0 == $0.1 }) { return fields[4] }
        }
        return nil
    }

    /// A line's fields: split at unescaped `:`; `\x` stands for `x`. The
    /// fifth field (the password) takes the rest of the line.
    private static func split(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
