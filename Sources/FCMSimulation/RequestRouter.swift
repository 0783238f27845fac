import HeraldPrimitives

/// What the connection does with one complete request.
enum RouterAction: Equatable {
    /// Answer, `delay` from now (zero: at once).
    case reply(FCMReply, delay: Duration)
    /// Refuse the stream unprocessed and send GOAWAY naming the ones before it.
    case refuseWithGoaway
    /// Close the connection at once, unanswered.
    case drop
}

/// One request, as the connection collected it.
struct CollectedRequest {
    var method = ""
    var path = ""
    var authorization: String?
    var body: [UInt8] = []
    var bodyTooLarge = false
    var headersTooLarge = false
    /// Header bytes and fields seen, kept or not.
    var headerBytes = 0
    var headerCount = 0
}

/// Routes a request to the token endpoint or `messages:send`, applying
/// injected faults, auth, the project check, quota, validation and the
/// token registry, in that order.
enum RequestRouter {
    static let sendPrefix = "/v1/projects/"
    static let sendSuffix = "/messages:send"

    static func route(_ request: CollectedRequest, state: FCMSimulatorState) -> RouterAction {
        if request.headersTooLarge {
            return .reply(FCMReply(status: 431, headers: [("content-type", "text/plain")], body: Array("header list too large\n".utf8)), delay: .zero)
        }
        let path = request.path.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(request.path[..<$0]) } ?? request.path
        if path == FCMSimulator.tokenPath {
            guard request.method == "POST" else { return .reply(.methodNotAllowed(), delay: .zero) }
            return .reply(TokenEndpoint.answer(body: request.body, bodyTooLarge: request.bodyTooLarge, state: state), delay: .zero)
        }
        guard let project = project(inSendPath: path) else { return .reply(.notFound(path), delay: .zero) }
        guard request.method == "POST" else { return .reply(.methodNotAllowed(), delay: .zero) }
        var delay = Duration.zero
        if let fault = state.nextSendFault() {
            switch fault {
            case .quotaExceeded(let seconds):
                return .reply(.quotaExceeded(retryAfter: seconds ?? state.quotaRetryAfter(project: project)), delay: .zero)
            case .internalError: return .reply(.internalError, delay: .zero)
            case .unavailable(let seconds): return .reply(.unavailable(retryAfter: seconds), delay: .zero)
            case .badGatewayHTML: return .reply(.badGatewayHTML, delay: .zero)
            case .thirdPartyAuthError: return .reply(.thirdPartyAuthError, delay: .zero)
            case .goaway: return .refuseWithGoaway
            case .dropConnection: return .drop
            case .slow(let duration): delay = duration
            case .invalidGrant: break  // never queued as a send fault
            }
        }
        return .reply(send(request, project: project, state: state), delay: delay)
    }

    /// `{project}` of `/v1/projects/{project}/messages:send`.
    static func project(inSendPath path: String) -> String? {
        guard path.hasPrefix(sendPrefix), path.hasSuffix(sendSuffix),
              path.utf8.count > sendPrefix.utf8.count + sendSuffix.utf8.count else { return nil }
        let project = String(path.dropFirst(sendPrefix.count).dropLast(sendSuffix.count))
        return project.contains("/") ? nil : project
    }

    static func send(_ request: CollectedRequest, project: String, state: FCMSimulatorState) -> FCMReply {
        guard let authorization = request.authorization else {
            return .unauthenticated("Request is missing required authentication credential. Expected OAuth 2 access token.")
        }
        guard authorization.utf8.count > 7, isBearer(authorization) else {
            return .unauthenticated("Request had invalid authentication credentials. Expected OAuth 2 access token.")
        }
        guard let grant = state.grant(for: String(authorization.dropFirst(7))) else {
            return .unauthenticated("Request had invalid authentication credentials: the access token is unknown or expired.")
        }
        guard grant.projectID == project else {
            return .permissionDenied("Permission 'cloudmessaging.messages.create' denied on resource 'projects/\(project.prefix(100))'.")
        }
        if let retryAfter = state.takeQuota(project: project) { return .quotaExceeded(retryAfter: retryAfter) }
        if request.bodyTooLarge {
            return .invalidArgument("Invalid value at 'message': the request body exceeds \(FCMSimulatorLimits.maxSendBody) bytes.")
        }
        let valid: MessageValidator.Valid
        switch MessageValidator.validate(request.body) {
        case .failure(let reply): return reply
        case .success(let result): valid = result
        }
        var token = ""
        var topic: String?
        var condition: String?
        switch valid.target {
        case .token(let target):
            token = target
            switch state.tokenState(target, project: project) {
            case .valid: break
            case .unregistered: return .unregistered
            case .otherSender: return .senderIDMismatch
            }
        case .topic(let name): topic = name
        case .condition(let expression): condition = expression
        }
        if valid.validateOnly {
            return .accepted(name: "projects/\(project)/messages/fake_message_id")
        }
        let name = "projects/\(project)/messages/0:\(Timestamp.nowMilliseconds())%\(state.nextMessageSuffix())"
        let accepted = FCMAcceptedMessage(
            projectID: project, token: token, message: valid.messageBytes, name: name, topic: topic, condition: condition)
        state.record(accepted, message: valid.message)
        return .accepted(name: name)
    }

    /// `Bearer ` in any case, without allocating.
    static func isBearer(_ authorization: String) -> Bool {
        var matched = 0
        for (byte, wanted) in zip(authorization.utf8, "bearer ".utf8) {
            guard (wanted == 0x20 ? byte : byte | 0x20) == wanted else { return false }
            matched += 1
        }
        return matched == 7
    }
}

/// Request bounds.
enum FCMSimulatorLimits {
    /// A `messages:send` body (the message itself must stay within 4096 bytes).
    static let maxSendBody = 65_536
    /// A token request body.
    static let maxTokenBody = 16_384
    /// Header bytes (names and values) per request.
    static let maxHeaderBytes = 16_384
    /// Header fields per request.
    static let maxHeaderCount = 64
}
