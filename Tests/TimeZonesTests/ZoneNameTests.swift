#if canImport(Glibc)
import Glibc
#endif
import HeraldPrimitives
import Testing
@testable import TimeZones

/// The file entry point: names checked before any path is built; missing,
/// oversized and non-TZif files are typed errors.
@Suite struct ZoneNameTests {
    @Test(arguments: [
        "", "/etc/passwd", "../etc/passwd", "America/../../etc/passwd", "America/./New_York", "..", ".", "America/New_York\u{0}",
        "America/New_York\u{0}/../../x", "America//New_York", "America/New_York/", ".hidden", "-rf", "Europe/Berlin ", "Europe/Bérlin",
        "Europe\\Berlin", "Europe/Berlin\n", String(repeating: "A", count: 129), "A/" + String(repeating: "b", count: 65), "~root", "$HOME",
    ])
    func nonIANANamesAreRejectedBeforeAnyRead(name: String) {
        #expect {
            _ = try Zones.directory.load(name)
        } throws: { error in
            guard case ZoneLoadError.invalidName = error else { return false }
            return !"\(error)".contains("\u{0}") && !"\(error)".contains("\n")
        }
    }

    @Test(arguments: ["America/New_York", "Etc/GMT+5", "Etc/GMT-14", "UTC", "America/Argentina/ComodRivadavia", "America/Port-au-Prince", "EST5EDT"])
    func ianaNamesAreAccepted(name: String) throws {
        #expect(try ZoneName(name).value == name)
        _ = try Zones.directory.load(name)
    }

    @Test func missingDirectoryAndNonTZifFiles() {
        #expect(throws: ZoneLoadError.unknownZone("Mars/Olympus_Mons", directory: ZoneInfoDirectory.defaultPath)) {
            try Zones.directory.load("Mars/Olympus_Mons")
        }
        #expect(throws: ZoneLoadError.unknownZone("America", directory: ZoneInfoDirectory.defaultPath)) { try Zones.directory.load("America") }
        #expect(throws: ZoneLoadError.invalidData("zone.tab", .badMagic(offset: 0))) { try Zones.directory.load("zone.tab") }
        #expect(throws: ZoneLoadError.unknownZone("UTC", directory: "/nonexistent")) { try ZoneInfoDirectory(path: "/nonexistent").load("UTC") }
    }

    @Test func oversizedFileIsRejectedWithoutReadingItWhole() throws {
        let dir = "/tmp/herald-tz-test-\(getpid())"
        try POSIXFile.createDirectories(dir + "/Big")
        defer { unlink(dir + "/Big/Zone"); rmdir(dir + "/Big"); rmdir(dir) }
        try POSIXFile.writeAtomically(dir + "/Big/Zone", bytes: [UInt8](repeating: 0x54, count: TZif.maximumFileSize + 1))
        #expect(throws: ZoneLoadError.fileTooLarge("Big/Zone", limit: TZif.maximumFileSize)) { try ZoneInfoDirectory(path: dir).load("Big/Zone") }
    }

    @Test func everyZoneAndLinkOfTheMachineLoads() throws {
        // tzdata.zi names every zone (`Z name …`) and link (`L target name`);
        // each must pass the name check, load, and convert.
        let table = try POSIXFile.readText("/usr/share/zoneinfo/tzdata.zi")
        var count = 0
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            let name: Substring
            switch fields.first {
            case "Z" where fields.count >= 2: name = fields[1]
            case "L" where fields.count >= 3: name = fields[2]
            default: continue
            }
            let zone = try Zones.directory.load(String(name))
            _ = zone.localTime(at: ms("2100-01-01T00:00:00Z"))
            _ = zone.instant(on: date(1900, 1, 1), at: hm("00:00"))
            count += 1
        }
        #expect(count > 590)  // 598 in Debian's tzdata 2025b
    }
}
