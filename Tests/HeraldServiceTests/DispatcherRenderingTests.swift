import APNsProvider
import APNsSimulation
import HeraldCore
import HeraldPrimitives
import HeraldStorage
import Testing

@testable import HeraldService

/// Render once per (message, locale): the devices of a push that share a
/// locale share its rendering, each request keeping its own `apns-id`.
@Suite("Dispatcher renderings", .timeLimit(.minutes(1)))
struct DispatcherRenderingTests {
    static let tokens = ["a1", "b2", "c3", "d4"].map { String(repeating: $0, count: 32) }

    @Test func eachLocaleIsRenderedOnceAndEachCopyGetsItsOwnID() throws {
        var renderings = APNsRenderings()
        var rendered: [String] = []
        let message = try StoredRequest.decode(
            DispatcherTests.requestBytes(bundle: DispatcherTests.bundle, key: "k", ttl: nil), idempotencyKey: "k")
        let ids = (0..<4).map { _ in UUIDv4.make() }
        let locales = ["en", "fr", "en", "en"]
        let made = try zip(zip(locales, ids), Self.tokens).map { localeAndID, token in
            let (locale, id) = localeAndID
            return try renderings.rendering(locale: locale, deviceToken: token, apnsID: id) { apnsID throws(RenderError) in
                rendered.append(locale)
                return try APNsRenderer.render(message, locale: locale, deviceToken: token, apnsID: apnsID,
                                               sendTime: Timestamp(milliseconds: 1_800_000_000_000))
            }.get()
        }
        #expect(rendered == ["en", "fr"])
        #expect(made.map { $0.header("apns-id") } == ids)
        #expect(made.map { $0.headers.count } == Array(repeating: made[0].headers.count, count: 4))
        #expect(made[2].payload == made[0].payload && made[3].payload == made[0].payload)
        #expect(made.map(\.path) == Self.tokens.map { "/3/device/" + $0 })  // each copy names its own device
    }

    @Test func aFailedRenderFailsEveryDeviceOfThatLocaleWithoutRenderingAgain() {
        var renderings = APNsRenderings()
        var calls = 0
        for _ in 0..<3 {
            let made = renderings.rendering(locale: "en", deviceToken: nil, apnsID: UUIDv4.make()) { _ throws(RenderError) in
                calls += 1
                throw RenderError.disabled(.ios)
            }
            guard case .failure(.disabled(.ios)) = made else {
                Issue.record("expected the render error, got \(made)")
                return
            }
        }
        #expect(calls == 1)
    }

    @Test("Four devices in two locales through the real simulator: four requests, four apns-ids, one payload per locale")
    func severalDevicesOfOneUserAreEachSentWithTheirOwnID() async throws {
        let rig = try await DispatcherTests.rig()
        defer { Task { await rig.close() } }
        for (index, token) in Self.tokens.enumerated() {
            _ = try await rig.store.registerDevice(Device(
                bundleID: DispatcherTests.bundle, platform: .ios, userID: "u1", deviceToken: token,
                locale: index == 1 ? "fr" : "en", timezone: "UTC", environment: .production,
                registeredAt: DispatcherTests.due - 10_000))
        }
        let message = try await DispatcherTests.schedule(rig, key: "four-devices", ttl: nil)
        let deliveries = try #require(rig.gateway.simulator).deliveryStream()
        await rig.dispatcher.dispatch(message.id)
        var received: [APNsDelivery] = []
        for await delivery in deliveries {
            received.append(delivery)
            if received.count == Self.tokens.count { break }
        }
        #expect(Set(received.map(\.deviceToken)) == Set(Self.tokens))
        #expect(Set(received.map(\.apnsID)).count == Self.tokens.count)
        #expect(Set(received.map(\.payload)).count == 1)  // the test message has no translations
        let outcomes = try await rig.store.outcomes(messageID: message.id)
        #expect(Set(outcomes.compactMap(\.providerMessageID)) == Set(received.map(\.apnsID)))
        #expect(outcomes.allSatisfy { $0.kind == .sent })
        #expect(try await rig.store.message(id: message.id)?.state == .sent)
    }
}
