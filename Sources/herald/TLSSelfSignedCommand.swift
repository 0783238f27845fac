import ArgumentParser
import HeraldPrimitives
import TLSTransport

#if canImport(Glibc)
import Glibc
#endif

/// `herald tls-selfsigned --out DIR [--host NAME]...`: a development PKI.
struct TLSSelfSignedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls-selfsigned",
        abstract: "Write a development CA, a server certificate and a client certificate (ECDSA P-256) for --tls-cert / --tls-client-ca.",
        usage: "herald tls-selfsigned --out <DIR> [--host <NAME>]... [--days <integer>]",
        discussion: """
            Writes into DIR: ca.crt (trust it in clients: grpcurl -cacert, grpcio root_certificates; \
            and --tls-client-ca for mTLS), server.crt and server.key (--tls-cert, --tls-key; valid for \
            localhost, 127.0.0.1, ::1 and every --host), client.crt and client.key (an mTLS client). \
            Keys are written 0600, certificates 0644; existing files are replaced. The CA's key is \
            not kept: make a new set to add names. For development and tests only.

            """ + SettingsReference.help(Settings.table)
    )

    /// Its settings (Setting.swift), flags only.
    enum Settings {
        static let out = Setting.text(
            "out", placeholder: "DIR", "The directory to write into (created 0700 when missing).", check: SettingRules.notEmpty
        ).isRequired()
        static let hosts = Setting.list(
            "host", placeholder: "NAME", "A further DNS name or IP address the server certificate is valid for."
        ) { host, _ in
            if host.isEmpty || host.contains(",") || host.utf8.contains(where: { $0 < 0x21 || $0 > 0x7e }) {
                throw ValidationError("--host: not a DNS name or IP address: \(host.debugDescription)")
            }
        }
        static let days = Setting.integer(
            "days", default: 365, "Days the certificates are valid.", check: SettingRules.range(1...3650))
        static let table = SettingsTable(command: "tls-selfsigned", layered: false, settings: [out, hosts, days])
    }

    /// The settings' flags, read by `Settings.table`.
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var arguments: [String] = []

    func run() throws {
        let settings = try SettingValues(flags: arguments, table: Settings.table)
        let (out, hosts, days) = (settings[Settings.out], settings[Settings.hosts], settings[Settings.days])
        var isDirectory = false
        if !POSIXFile.exists(out, isDirectory: &isDirectory) {
            guard mkdir(out, 0o700) == 0 else {
                throw ValidationError("cannot create \(out): \(String(cString: strerror(errno)))")
            }
        } else if !isDirectory {
            throw ValidationError("\(out) exists and is not a directory")
        }
        let set = try DevelopmentCertificates.generate(hosts: hosts, days: days)
        let files: [(String, String, mode_t)] = [
            ("ca.crt", set.caCertificatePEM, 0o644),
            ("server.crt", set.serverCertificatePEM, 0o644),
            ("server.key", set.serverKeyPEM, 0o600),
            ("client.crt", set.clientCertificatePEM, 0o644),
            ("client.key", set.clientKeyPEM, 0o600),
        ]
        for (name, text, mode) in files {
            let path = out.hasSuffix("/") ? out + name : out + "/" + name
            try Self.write(path, text, mode: mode)
            print(path)
        }
    }

    /// Replaces `path` with `text`: a fresh file created with `mode` (never
    /// a moment with a key readable by others), renamed over the old one.
    static func write(_ path: String, _ text: String, mode: mode_t) throws {
        let temporary = "\(path).tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ValidationError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        // The umask may have taken bits away, never added any; fchmod sets the intended ones.
        guard fchmod(fd, mode) == 0, POSIXFile.writeAll(fd, Array(text.utf8)), fsync(fd) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw ValidationError("cannot write \(temporary): \(message)")
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw ValidationError("cannot rename \(temporary) to \(path): \(message)")
        }
    }
}
