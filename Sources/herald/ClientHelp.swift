import HeraldClient

/// The `--help` text of every client subcommand: the exit statuses.
enum ClientHelp {
    static let discussion = """
        Connects to --addr (or HERALD_ADDRESS, else \(ClientTarget.defaultAddress)) over cleartext HTTP/2, or TLS \
        with --tls/--ca-file. The token comes from HERALD_TOKEN or --token-file. docs/CLIENT.md has examples.

        Exit status:
        \(ExitStatus.table)
        """
}
