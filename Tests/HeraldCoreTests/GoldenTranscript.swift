import HeraldPrimitives
@testable import HeraldCore

/// The matrix behind ``GoldenOutputTests``: messages × locales × tokens
/// rendered as APNs alert, handoff, revoke and FCM requests, plus the
/// schedule-time size check and validation errors, as one text.
enum GoldenTranscript {
    static func variants() -> [(String, MessageInput)] {
        var out: [(String, MessageInput)] = []
        let rich = Fixtures.rich()
        out.append(("rich", rich))

        var skygear = rich
        skygear.ios = [
            "alert": ["action-loc-key": "PLAY", "title": "T!"], "badge": 5, "sound": nil,
            "custom": ["x": 1, "a": [true, nil]], "meta": ["carrier": nil, "new": [1]],
            "order_id": nil, "zzz": "last",
            "aps": ["category": "C2", "alert": ["subtitle": nil, "loc-args": ["a", "b"]], "thread-id": nil,
                    "mutable-content": 0, "new-aps": 1, "badge": 9],
        ]
        out.append(("skygear", skygear))

        var plainAlert = rich
        plainAlert.ios = ["aps": ["alert": "plain string", "badge": nil, "sound": ["critical": 1, "name": "x"]]]
        out.append(("plainAlert", plainAlert))

        var enabled = rich
        enabled.ios = ["enabled": true]
        enabled.android = ["enabled": true, "notification": ["icon": "parcel", "sound": nil], "priority": "NORMAL", "direct_boot_ok": true]
        out.append(("enabled", enabled))

        var disabled = rich
        disabled.ios = ["enabled": false]
        disabled.android = ["enabled": false]
        out.append(("disabled", disabled))

        var noAlert = rich
        noAlert.ios = ["aps": ["alert": nil]]
        noAlert.collapseID = ""
        noAlert.ttlSeconds = 0
        noAlert.priority = .low
        out.append(("noAlert", noAlert))

        let strange: JSONValue = "q\"\\\n\t\u{01}\u{1F}\u{7F}\u{2028}\u{2029}\u{2027}é€😀 end"
        var text = Fixtures.message(
            content: NotificationContent(
                title: .text("Tit\"le\u{2028}"), subtitle: .text(""), body: .text("Body\\ \u{0}"),
                sound: "", badge: 0,
                userInfo: [
                    "s": strange, "n1": 0.1, "n2": 1e21, "n3": -0.0, "n4": 1.5e-7, "n5": 9_007_199_254_740_992,
                    "n6": -3, "n7": 1e16, "n8": 123_456.789, "n9": .number(.leastNonzeroMagnitude), "n10": -1.25, "": "empty key", "B": 1, "a": 2,
                    "é": 3, "ab": 4, "a\u{0}": 5, "abcdefgh": 6, "abcdefghi": 7, "abcdefgg": 8, "abcdefgh\u{0}": 9,
                    "nested": ["z": ["y": ["x": [[], [:], [nil]]]], "A": "b", "long key with spaces": 1.0],
                ]),
            priority: .normal, ttl: 2_419_200, collapseID: "c", key: "k\"ey")
        out.append(("text", text))
        text.ios = ["nested": ["A": nil, "new": "n", "z": ["y": "replaced"]], "s": 1, "brand-new": ["k": "v"]]
        out.append(("textPatched", text))

        let mixed = NotificationContent(
            title: .translations(["en-US": "Hi", "de_de": "Hallo", "DE-AT": "Servus", "pt-BR": "Oi", "pt-PT": "Olá"]),
            body: .translations(["en_us": "B", "de-DE": "K", "de-at": "Ö", "PT-br": "C", "pt-pt": "D"]),
            defaultLocale: "EN-us", imageURL: "HTTPS://img.example.com/x.png")
        out.append(("mixed", Fixtures.message(content: mixed, key: nil)))

        let big = NotificationContent(
            title: .translations(["en": "t", "de": String(repeating: "ü", count: 2100)]),
            body: .translations(["en": "b", "de": "b"]), defaultLocale: "en")
        out.append(("big", Fixtures.message(content: big)))

        // Invalid messages (violation lists are compared sorted: their order
        // follows dictionary iteration, which is seeded per process).
        out.append(("dup", Fixtures.message(content: NotificationContent(
            title: .translations(["en": "a", "EN": "b", "de": ""]), body: .translations(["en": "a", "fr": "b", "de": "c"]),
            defaultLocale: "it", badge: -1, userInfo: ["aps": 1, "ctx_x": 2, "ok": .number(.nan), "deep": ["v": [1, .number(.infinity)]]],
            imageURL: "http://x"), collapseID: String(repeating: "c", count: 65),
            ios: ["ctx_a": 1, "enabled": "yes", "aps": 3, "n": .number(-.infinity)])))
        out.append(("mismatch", Fixtures.message(content: NotificationContent(
            title: .translations(["en": "a", "de": "b"]), subtitle: .translations(["en": "a"]),
            body: .translations(["en": "a", "DE": "b"]), defaultLocale: "EN", imageURL: "https://"))))
        out.append(("badTags", Fixtures.message(content: NotificationContent(
            title: .translations(["1x": "a", "en-": "b", "a_b": "c"]), body: .translations(["1x": "a", "en-": "b", "A-B": "c"]),
            defaultLocale: "a-b", imageURL: "https:///x"), ios: ["aps": ["alert": ["t": .number(.nan)]]])))
        out.append(("missing", MessageInput(bundleID: "bad", platform: nil, content: NotificationContent(title: .translations([:]), body: nil, defaultLocale: "x y"), ttlSeconds: 9_999_999)))
        out.append(("textDefault", Fixtures.message(content: NotificationContent(title: .text("a"), body: .text("b"), defaultLocale: "fr-CA"))))
        out.append(("android", Fixtures.message(platform: .android, content: rich.content, android: ["collapse_key": "x", "notification": ["icon": "i"]])))
        return out
    }

    static let locales: [String?] = [nil, "", "de-CH", "de", "DE_at", "de-de", "en", "fr-FR", "ja", "en-us", "pt", "pt-AO", "x y"]
    static let tokens: [String?] = [Fixtures.token, "7F" + String(repeating: "a", count: 62), nil, "xyz"]

    static func transcript() -> String {
        var out = ""
        let now = Timestamp(seconds: 1_767_225_600, nanoseconds: 5)
        for (name, m) in variants() {
            for locale in locales {
                for token in tokens {
                    out += "## \(name) locale=\(locale ?? "nil") token=\(token ?? "nil")\n"
                    let input = RenderInput(message: m, locale: locale, deviceToken: token)
                    let msg: PushMessage
                    do {
                        msg = try Validator.validate(input, generateIdempotencyKey: { "generated" })
                    } catch {
                        out += "invalid: " + error.violations.map { "\($0.field): \($0.reason)" }.sorted().joined(separator: " | ") + "\n"
                        continue
                    }
                    switch msg.platform {
                    case .ios:
                        do {
                            let r = try APNsRenderer.render(msg, locale: locale, deviceToken: token, apnsID: Fixtures.apnsID.uppercased(), sendTime: now)
                            out += "path \(r.path)\nheaders \(r.headers)\npayload \(r.payloadJSON) (\(r.payload.count))\n"
                            out += "resolved \(r.resolvedLocale ?? "nil") \(r.localeMatch?.rawValue ?? "nil") warnings \(r.warnings)\n"
                            let h = try APNsRenderer.renderHandoff(msg, locale: locale, deviceToken: token, apnsID: Fixtures.apnsID, sendTime: now, windowEnd: Timestamp(seconds: 1_767_226_000))
                            out += "handoff \(h.headers) \(h.payloadJSON)\n"
                        } catch {
                            out += "render error: \(error)\n"
                        }
                        out += "sizes \(APNsRenderer.payloadSizeViolations(msg, handoffWindowEnd: Timestamp(seconds: 1_767_226_000)).map(\.description))\n"
                    case .android:
                        do {
                            let f = try FCMRenderer.render(msg, locale: locale, deviceToken: token)
                            out += "fcm \(f.messageJSON) \(f.resolvedLocale ?? "nil") \(f.warnings)\n"
                        } catch {
                            out += "fcm error: \(error)\n"
                        }
                    }
                }
            }
        }
        let revoke = APNsRenderer.renderRevoke(bundleID: "com.example.app", idempotencyKey: "k\u{2028}", deviceToken: nil, apnsID: Fixtures.apnsID, expiresAt: now)
        out += "revoke \(revoke.path) \(revoke.headers) \(revoke.payloadJSON)\n"
        return out
    }

    static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}
