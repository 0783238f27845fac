import HeraldClient

/// A connected client and the flags calls need.
struct ClientSession {
    let client: GRPCClient
    let token: String?
    let json: Bool
    let timeout: Duration

    var metadata: [(String, String)] { token.map { [("authorization", "Token \($0)")] } ?? [] }

    /// One unary call; the reply decoded.
    func call(_ rpc: HeraldRPC, _ fields: [(String, ProtoValue)]) async throws -> ProtoNode {
        let request = try ProtoMessage.pack(rpc.request, fields)
        let reply = try await client.unary(rpc.path, message: request, metadata: metadata, timeout: timeout)
        return try ProtoMessage.read(rpc.reply, reply)
    }

    /// Prints a reply: a table, or one JSON document.
    func print(_ node: ProtoNode) {
        writeUnbuffered((json ? ProtoJSON.line(node) : ProtoTable.render(node)) + "\n", to: 1)
    }
}
