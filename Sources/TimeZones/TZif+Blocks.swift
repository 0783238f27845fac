/// The header, data block and footer reading behind ``TZif/parse(_:name:)``.
extension TZif {
    /// The counts of one header, bounded.
    struct Header {
        let version: UInt8
        let isutcnt: Int, isstdcnt: Int, leapcnt: Int, timecnt: Int, typecnt: Int, charcnt: Int

        init(_ bytes: [UInt8], at offset: Int) throws(TZifError) {
            guard offset + 44 <= bytes.count else { throw .truncated(what: "header", offset: offset, needed: 44) }
            guard bytes[offset] == 0x54, bytes[offset + 1] == 0x5A, bytes[offset + 2] == 0x69, bytes[offset + 3] == 0x66 else {
                throw .badMagic(offset: offset)
            }
            version = bytes[offset + 4]
            guard version == 0 || (0x32...0x34).contains(version) else { throw .unsupportedVersion(version) }
            func count(_ index: Int, _ field: String, _ limit: Int) throws(TZifError) -> Int {
                let value = Reader.u32(bytes, offset + 20 + 4 * index)
                guard value <= UInt32(limit) else { throw .countTooLarge(field: field, value: value, limit: limit) }
                return Int(value)
            }
            isutcnt = try count(0, "isutcnt", TZif.maximumTypes)
            isstdcnt = try count(1, "isstdcnt", TZif.maximumTypes)
            leapcnt = try count(2, "leapcnt", TZif.maximumTransitions)
            timecnt = try count(3, "timecnt", TZif.maximumTransitions)
            typecnt = try count(4, "typecnt", TZif.maximumTypes)
            charcnt = try count(5, "charcnt", TZif.maximumAbbreviationBytes)
        }

        /// Bytes of the data block that follows (counts are bounded: no overflow).
        func dataLength(timeSize: Int) -> Int {
            timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
        }
    }

    /// The decoded 64-bit (or version-1 32-bit) data block.
    struct DataBlock {
        var transitions: [Int64]
        var transitionTypes: [UInt8]
        var types: [LocalTimeType]
    }

    /// A bounds-checked cursor over the file.
    struct Reader {
        let bytes: [UInt8]
        var at: Int

        static func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
            UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }

        static func i64(_ b: [UInt8], _ i: Int) -> Int64 {
            Int64(bitPattern: UInt64(u32(b, i)) << 32 | UInt64(u32(b, i + 4)))
        }

        mutating func take(_ count: Int, _ what: String) throws(TZifError) -> Int {
            guard count <= bytes.count - at else { throw .truncated(what: what, offset: at, needed: count) }
            defer { at += count }
            return at
        }

        mutating func dataBlock(_ h: Header, timeSize: Int) throws(TZifError) -> DataBlock {
            guard h.typecnt >= 1 else { throw .invalidCounts("typecnt is zero") }
            guard h.charcnt >= 1 else { throw .invalidCounts("charcnt is zero") }
            guard h.isutcnt == 0 || h.isutcnt == h.typecnt else { throw .invalidCounts("isutcnt is neither 0 nor typecnt") }
            guard h.isstdcnt == 0 || h.isstdcnt == h.typecnt else { throw .invalidCounts("isstdcnt is neither 0 nor typecnt") }
            guard h.leapcnt == 0 else { throw .leapSecondsUnsupported }
            let length = h.dataLength(timeSize: timeSize)
            guard length <= bytes.count - at else { throw .truncated(what: "data block", offset: at, needed: length) }

            var transitions = [Int64]()
            transitions.reserveCapacity(h.timecnt)
            let timesAt = try take(h.timecnt * timeSize, "transition times")
            for i in 0..<h.timecnt {
                let t = timeSize == 8 ? Reader.i64(bytes, timesAt + 8 * i) : Int64(Int32(bitPattern: Reader.u32(bytes, timesAt + 4 * i)))
                guard t >= -TZif.transitionLimit, t <= TZif.transitionLimit, i == 0 || t > transitions[i - 1] else { throw .invalidTransition(index: i) }
                transitions.append(t)
            }
            let indexAt = try take(h.timecnt, "transition types")
            let transitionTypes = Array(bytes[indexAt..<(indexAt + h.timecnt)])
            for (i, type) in transitionTypes.enumerated() where Int(type) >= h.typecnt {
                throw .typeIndexOutOfRange(index: i, type: Int(type))
            }
            let typesAt = try take(h.typecnt * 6, "local time types")
            let charsAt = try take(h.charcnt, "abbreviations")
            var types = [LocalTimeType]()
            types.reserveCapacity(h.typecnt)
            for i in 0..<h.typecnt {
                let base = typesAt + 6 * i
                let offset = Int32(bitPattern: Reader.u32(bytes, base))
                guard (-89_999...93_599).contains(offset) else { throw .invalidOffset(type: i, seconds: offset) }
                let isDST = bytes[base + 4]
                guard isDST <= 1 else { throw .invalidDSTFlag(type: i, value: isDST) }
                let index = Int(bytes[base + 5])
                guard index < h.charcnt else { throw .invalidAbbreviation(type: i) }
                var end = charsAt + index
                while end < charsAt + h.charcnt && bytes[end] != 0 {
                    guard bytes[end] >= 0x20 && bytes[end] < 0x7F else { throw .invalidAbbreviation(type: i) }
                    end += 1
                }
                guard end < charsAt + h.charcnt else { throw .invalidAbbreviation(type: i) }
                types.append(LocalTimeType(
                    utcOffsetSeconds: offset, isDaylightSaving: isDST == 1,
                    abbreviation: String(decoding: bytes[(charsAt + index)..<end], as: UTF8.self)))
            }
            _ = try take(h.isstdcnt + h.isutcnt, "standard/UT indicators")
            return DataBlock(transitions: transitions, transitionTypes: transitionTypes, types: types)
        }

        /// `\n` TZ-string `\n`; an empty TZ string means no rule.
        mutating func footer() throws(TZifError) -> POSIXTimeZone? {
            guard at < bytes.count, bytes[at] == 0x0A else { throw .invalidFooter("missing (no newline after the data block)") }
            let start = at + 1
            guard let end = bytes[start...].firstIndex(of: 0x0A) else { throw .invalidFooter("no closing newline") }
            guard end + 1 == bytes.count else { throw .invalidFooter("bytes after the closing newline") }
            if end == start { return nil }
            return try POSIXTimeZone(parsing: bytes[start..<end])
        }
    }
}
