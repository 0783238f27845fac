import Testing
@testable import HeraldCore

/// Schedule's `local_send_time` (SPEC §3, §4b): exactly `HH:MM`, 00:00 to
/// 23:59; anything else is INVALID_ARGUMENT naming the field, the input
/// quoted truncated. `transactional` and the time travel in the validated
/// message (the dispatcher reads them at claim time).
@Suite("Validation: local_send_time and transactional")
struct LocalSendTimeTests {
    static let hostile: [(String, String)] = [
        ("24:00 (no such hour)", "24:00"), ("23:60 (no such minute)", "23:60"), ("99:99", "99:99"),
        ("one-digit hour", "7:05"), ("one-digit minute", "07:5"), ("seconds", "07:05:00"), ("no colon", "0705"),
        ("a dot", "07.05"), ("a leading space", " 07:05"), ("a trailing space", "07:05 "), ("a sign", "+7:05"),
        ("NUL inside", "07:\u{0}5"), ("NUL after", "07:05\u{0}"), ("Arabic-Indic digits", "٠٧:٠٥"),
        ("fullwidth digits", "０７:０５"), ("fullwidth colon", "07：05"), ("a 12-hour time", "7:05 PM"),
        ("an RFC 3339 time", "2026-11-27T07:05:00Z"), ("10 kB", String(repeating: "1", count: 10_000)),
        ("letters", "ab:cd"), ("a negative minute", "07:-5"),
    ]

    @Test("hostile times are INVALID_ARGUMENT naming the field, quoted truncated", arguments: hostile)
    func refused(_ name: String, _ text: String) {
        #expect(LocalSendTime(parsing: text) == nil)
        var input = Fixtures.schedule()
        input.localSendTime = text
        do {
            _ = try Validator.validate(input, now: Fixtures.now, generateIdempotencyKey: { "gen" })
            Issue.record("\(name): accepted")
        } catch {
            let violation = error.violations.first { $0.field == "local_send_time" }
            #expect(violation != nil, "got \(error.violations)")
            let reason = violation?.reason ?? ""
            #expect(reason.contains("HH:MM"))
            #expect(reason.contains(ErrorText.quote(text)))
            #expect(reason.utf8.count < 200)  // the 10 kB input is not echoed
        }
    }

    static let valid: [(String, Int)] = [("00:00", 0), ("23:59", 1439), ("07:05", 425), ("12:00", 720), ("09:30", 570)]

    @Test("valid times parse to their minute of the day", arguments: valid)
    func accepted(_ text: String, _ minute: Int) throws {
        let time = try #require(LocalSendTime(parsing: text))
        #expect(time.minuteOfDay == minute && time.description == text)
        var input = Fixtures.schedule()
        input.localSendTime = text
        input.transactional = true
        let validated = try Validator.validate(input, now: Fixtures.now, generateIdempotencyKey: { "gen" })
        #expect(validated.message.localSendTime == time)
        #expect(validated.message.transactional)
    }

    @Test func unsetIsNoLocalTimeAndNotTransactional() throws {
        let validated = try Validator.validate(Fixtures.schedule(), now: Fixtures.now, generateIdempotencyKey: { "gen" })
        #expect(validated.message.localSendTime == nil && !validated.message.transactional)
        #expect(LocalSendTime(hour: 24, minute: 0) == nil && LocalSendTime(hour: 0, minute: 60) == nil)
    }
}
