import Testing
@testable import TimeZones

/// ``ZoneCache``: each name loaded once, bounded, thread-safe; SPEC §4b's
/// fallback (device zone, else the policy's, else UTC).
@Suite struct ZoneCacheTests {
    @Test func hostileNamesAreMissesNotCrashes() {
        let cache = ZoneCache(capacity: 8)
        for name in ["", "../../etc/passwd", "/etc/localtime", "Europe/\u{0}Berlin", "Mars/Olympus", String(repeating: "A", count: 10_000)] {
            #expect(cache.rules(named: name) == nil)
        }
        #expect(cache.count <= 8)
    }

    @Test func aNameIsLoadedOnceHitOrMiss() {
        let cache = ZoneCache()
        #expect(cache.rules(named: "Europe/Berlin")?.name == "Europe/Berlin")
        #expect(cache.rules(named: "Europe/Berlin")?.name == "Europe/Berlin")
        #expect(cache.rules(named: "Mars/Olympus") == nil)
        #expect(cache.rules(named: "Mars/Olympus") == nil)
        #expect(cache.loads == 2 && cache.count == 2)
    }

    @Test func itHoldsAtMostItsCapacity() {
        let cache = ZoneCache(capacity: 3)
        let names = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Apia", "Australia/Lord_Howe", "UTC"]
        for name in names { #expect(cache.rules(named: name)?.name == name) }
        #expect(cache.count == 3 && cache.loads == names.count)
        // An evicted name loads again, correctly.
        for name in names { #expect(cache.rules(named: name)?.name == name) }
        #expect(cache.count == 3)
    }

    @Test func theDeviceZoneThenThePolicyZoneThenUTC() {
        let cache = ZoneCache()
        #expect(cache.resolve(device: "Asia/Tokyo", policy: "Europe/Berlin").name == "Asia/Tokyo")
        #expect(cache.resolve(device: "Not/AZone", policy: "Europe/Berlin").name == "Europe/Berlin")
        #expect(cache.resolve(device: "", policy: "Europe/Berlin").name == "Europe/Berlin")
        #expect(cache.resolve(device: nil, policy: "Nope/Nope").name == "UTC")
        #expect(cache.resolve(device: nil, policy: nil).name == "UTC")
    }

    @Test func utcIsBuiltInMemory() {
        let utc = ZoneRules.utc
        let t = localTime(utc, 1_780_000_000_000)
        #expect(t.utcOffsetSeconds == 0 && t.abbreviation == "UTC" && !t.isDaylightSaving)
        #expect(utc.instant(on: date(2026, 6, 1), at: hm("09:00")) == ms("2026-06-01T09:00:00Z"))
    }

    @Test func concurrentLookupsAgree() async {
        let cache = ZoneCache(capacity: 4)
        let names = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Apia", "Australia/Lord_Howe", "Bad/Zone"]
        await withTaskGroup(of: Bool.self) { group in
            for i in 0..<200 {
                let name = names[i % names.count]
                group.addTask { (cache.rules(named: name)?.name ?? "Bad/Zone") == name }
            }
            for await ok in group { #expect(ok) }
        }
        #expect(cache.count <= 4)
    }

    private func localTime(_ zone: ZoneRules, _ ms: Int64) -> LocalTime { zone.localTime(at: ms) }
}
