import APNs
import FCM
import HeraldCore
import HeraldPrimitives
import HeraldStorage

extension Dispatcher {
    /// The client a device's pushes go through.
    enum ProviderRoute: Sendable {
        case apns(any APNsSending)
        case fcm(any FCMSending, projectID: String)

        /// The route's admission key (its client's identity).
        var id: ObjectIdentifier {
            switch self {
            case .apns(let client): ObjectIdentifier(client)
            case .fcm(let sender, _): ObjectIdentifier(sender)
            }
        }
    }

    struct Unrouted: Error, CustomStringConvertible {
        var description: String
    }

    /// The route for `device` (APNs for iOS, FCM for Android), or why none.
    func providerRoute(bundleID: String, device: Device) -> Result<ProviderRoute, Unrouted> {
        switch device.platform {
        case .ios:
            guard let client = gateway.sender(bundleID: bundleID, environment: device.environment) else {
                return .failure(Unrouted(description: "no APNs route for \(bundleID) (\(device.environment?.rawValue ?? "production"))"))
            }
            return .success(.apns(client))
        case .android:
            guard let route = gateway.fcmSender(bundleID: bundleID) else {
                return .failure(Unrouted(description: "no FCM route for \(bundleID)"))
            }
            return .success(.fcm(route.sender, projectID: route.projectID))
        }
    }

    /// Renders `push` for an Android device (its locale) and sends it.
    func sendFCM(
        _ message: PushMessage, of stored: StoredMessage, push: Push, to device: Device, with sender: any FCMSending,
        projectID: String, deadline: Timestamp, singleAttempt: Bool, pushStart: Int64
    ) async -> DeviceResult {
        let rendering: FCMRendering
        do {
            switch push {
            case .alert:
                rendering = try FCMRenderer.render(message, locale: device.locale, deviceToken: device.deviceToken)
            case .handoff:
                rendering = try FCMRenderer.renderHandoff(
                    message, locale: device.locale, deviceToken: device.deviceToken,
                    sendTime: Timestamp(milliseconds: clock.now()), windowEnd: Timestamp(milliseconds: stored.windowEnd))
            }
        } catch {
            return .failed("render: \(error)")
        }
        return await sendFCM(
            rendering.body, to: device, with: sender, projectID: projectID, deadline: deadline, singleAttempt: singleAttempt,
            willHandOver: handOvers.hook(messageID: stored.id, deviceToken: device.deviceToken, push: pushStart))
    }

    /// Sends one FCM message body. With `willHandOver`, the client calls it
    /// when the request is about to leave on a stream (token, rate bucket
    /// and connection ready), and the device's hand-over mark is recorded
    /// then (SPEC §4: a crash after it leaves the device UNCONFIRMED, never
    /// resent); when it cannot be, nothing is sent.
    func sendFCM(
        _ body: [UInt8], to device: Device, with sender: any FCMSending, projectID: String, deadline: Timestamp,
        singleAttempt: Bool = false, willHandOver: FCMHandOverHook? = nil
    ) async -> DeviceResult {
        let request = FCMRequest(
            projectID: projectID, deviceToken: device.deviceToken, body: body, deadline: deadline, singleAttempt: singleAttempt,
            willHandOver: willHandOver)
        let sentAt = clock.now()
        do {
            let response = try await gateway.send(request, with: sender)
            if response.isSuccess { return .delivered(apnsID: response.messageName ?? "", attempts: response.attempts) }
            let refusal = FCMRefusal(response)
            if refusal.kind.dropsDevice {
                // Unregistered: only a registration older than this send (a
                // re-registration since is a new token life).
                let registeredBefore = refusal.kind == .unregistered ? sentAt + 1 : .max
                _ = try? await store.removeDevice(
                    bundleID: device.bundleID, deviceToken: device.deviceToken, ifRegisteredBefore: registeredBefore)
            }
            return .refused(refusal.kind, reason: refusal.reason, status: response.status, attempts: response.attempts)
        } catch FCMError.deadlineExceeded {
            return .expired
        } catch FCMError.shutdown {
            return .interrupted
        } catch is CancellationError {
            return .interrupted
        } catch {
            return .failed("\(error)")
        }
    }
}
