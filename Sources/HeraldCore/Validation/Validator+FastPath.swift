import HeraldPrimitives

/// The fast path: content of the common shape (short locale tags, the same
/// locale set in every translated field) is known valid without running
/// the full checks; anything else falls back to them.
extension Validator {
    /// A locale tag of 1–7 bytes folded (ASCII lower case, `_` → `-`) into
    /// the high bytes of a word, its length in the low byte: two such tags
    /// are equal under `LocaleResolver.tagsEqual` exactly when
    /// their words are equal. 0 for longer or empty tags (no fast path).
    @inline(__always)
    static func foldedTag(_ p: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let n = p.count
        guard n >= 1 && n <= 7 else { return 0 }
        var x = UInt64(n)
        var i = 0
        while i < n {
            x |= UInt64(LocaleResolver.fold(p[i])) &<< UInt64(56 &- 8 &* i)
            i += 1
        }
        return x
    }

    /// The folded tags of a translation map, sorted, when every tag is
    /// well-formed and 1–7 bytes long, every text is non-empty and no two
    /// tags are equal; nil otherwise (then the full checks decide).
    @inline(__always)
    ///
    /// `checkShape: false` is for a map that must equal a reference set
    /// whose tags were checked: a tag that folds to a well-formed tag is
    /// well-formed itself.
    static func plainTagSet(_ t: SortedMap<String>, checkShape: Bool) -> (tags: InlineArray<8, UInt64>, count: Int)? {
        let n = t.count
        guard n >= 1 && n <= 8 else { return nil }
        var a = InlineArray<8, UInt64>(repeating: 0)
        var count = 0
        for (tag, text) in t {
            if text.isEmpty { return nil }
            let f = withBytes(tag) { p -> UInt64 in
                let f = foldedTag(p)
                return f != 0 && (!checkShape || LocaleResolver.isWellFormed(p)) ? f : 0
            }
            if f == 0 { return nil }
            var j = count
            while j > 0 && a[j - 1] > f {
                a[j] = a[j - 1]
                j -= 1
            }
            if j > 0 && a[j - 1] == f { return nil }  // duplicate tag
            a[j] = f
            count += 1
        }
        return (a, count)
    }

    /// True when `checkContent` would find nothing to report, established
    /// cheaply for the common shape (short tags, the same locale set in
    /// every translated field); false means "run the full checks", not
    /// "invalid".
    static func contentIsPlainlyValid(_ c: NotificationContent) -> Bool {
        var reference: (tags: InlineArray<8, UInt64>, count: Int)?
        func field(_ text: LocalizedText?, required: Bool) -> Bool {
            switch text {
            case nil:
                return !required
            case .text(let s)?:
                return !required || !s.isEmpty
            case .translations(let t)?:
                guard let set = plainTagSet(t, checkShape: reference == nil) else { return false }
                if let ref = reference {
                    guard ref.count == set.count else { return false }
                    for i in 0..<set.count where ref.tags[i] != set.tags[i] { return false }
                } else {
                    reference = set
                }
                return true
            }
        }
        guard field(c.title, required: true), field(c.subtitle, required: false), field(c.body, required: true) else {
            return false
        }
        if let ref = reference {
            guard let d = c.defaultLocale else { return false }
            let f = withBytes(d) { foldedTag($0) }
            guard f != 0 else { return false }
            var found = false
            for i in 0..<ref.count where ref.tags[i] == f { found = true }
            if !found { return false }
        } else if let d = nonEmpty(c.defaultLocale), !LocaleResolver.isWellFormed(d) {
            return false
        }
        if let b = c.badge, b < 0 { return false }
        if let url = nonEmpty(c.imageURL), imageURLProblem(url) != nil { return false }
        if !c.userInfo.isEmpty {
            for (k, value) in c.userInfo {
                if isLiteral(k, "aps") || isHeraldKey(k) || value.containsNonFiniteNumber { return false }
            }
        }
        return true
    }
}
