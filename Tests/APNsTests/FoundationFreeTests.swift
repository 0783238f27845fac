import Foundation
@testable import APNs
import HeraldPrimitives
import Testing

/// The Foundation-free replacements agree with Foundation (tests may link it).
@Suite("Foundation-free helpers")
struct FoundationFreeTests {
    @Test("Base64URL matches Foundation's base64 with the URL alphabet, no padding, for every length")
    func base64MatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            #expect(Base64URL.decode(Substring(expected)) == bytes)
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
            #expect(Base64.decodeURL(Data(bytes).base64EncodedString()) == bytes)
        }
    }

    @Test("Malformed base64url is rejected")
    func base64Rejects() {
        #expect(Base64URL.decode("abcde") == nil)      // 4n+1 characters
        #expect(Base64URL.decode("ab$d") == nil)       // outside the alphabet
        #expect(Base64URL.decode("a=bc") == nil)       // padding inside
        #expect(Base64URL.decode("") == [])
    }

    @Test("Timestamp reads the same wall clock as Date")
    func epochTimeNow() {
        let before = Date().timeIntervalSince1970
        let now = Timestamp.now.timeIntervalSince1970
        let after = Date().timeIntervalSince1970
        #expect(now >= before - 0.001 && now <= after + 0.001)
        let t = Timestamp(timeIntervalSince1970: 100)
        #expect(t.addingTimeInterval(2.5).timeIntervalSince(t) == 2.5)
        #expect(t < t.addingTimeInterval(0.001))
        #expect(Timestamp(milliseconds: 1_500).timeIntervalSince1970 == 1.5)
    }

    @Test("Error-body numbers read as NSNumber.int64Value did")
    func errorBodyNumbers() {
        let fractional = APNsResponse.parse(status: 410, apnsID: nil, body: Array(#"{"reason":"Unregistered","timestamp":12.9}"#.utf8))
        #expect(fractional.timestampMilliseconds == 12)
        let text = APNsResponse.parse(status: 410, apnsID: nil, body: Array(#"{"timestamp":"12"}"#.utf8))
        #expect(text.timestampMilliseconds == nil && text.reason == nil)
        let array = APNsResponse.parse(status: 400, apnsID: nil, body: Array(#"["BadTopic"]"#.utf8))
        #expect(array.reason == nil)
    }
}
