/// "Did you mean" for a name that is not a setting: a flag (`--grace-second`),
/// a config-file key (`grace_seconds`, `HERALD_PORT`) or an environment
/// variable (`HERALD_GRACE_SECOND`), and the unknown `HERALD_*` variables a
/// layered command warns about (a misspelled variable must not be ignored in
/// silence).
extension SettingsTable {
    /// Variables that are not settings and are read elsewhere: `serve`'s
    /// config file, the `herald` client's address and token.
    static let otherVariables: Set<String> = ["HERALD_CONFIG", "HERALD_ADDRESS", "HERALD_TOKEN"]

    /// Prefixes of the variables the repository's own test and benchmark
    /// scripts set for themselves (never read by `herald`).
    static let toolingPrefixes = ["HERALD_TEST_", "HERALD_BENCH", "HERALD_EXP_", "HERALD_BIN", "HERALD_PACKAGE",
                                  "HERALD_PID", "HERALD_ARGS", "HERALD_PROTOS"]

    /// The setting `given` most likely meant, spelled as `given` was: by
    /// the same name in another spelling (`grace_seconds`, `HERALD_PORT`,
    /// `--Port`), else by the nearest name within a few edits.
    func suggestion(for given: String) -> (any AnySetting)? {
        let wanted = Self.normalized(given)
        guard !wanted.isEmpty else { return nil }
        if let same = settings.first(where: { $0.name == wanted }) { return same }
        let limit = max(1, min(3, wanted.count / 4))
        return Self.nearest(wanted, among: settings.map(\.name), limit: limit).flatMap { setting(named: $0) }
    }

    /// The name of `names` fewest edits from `word`, if within `limit`
    /// (the first of equals).
    static func nearest(_ word: String, among names: [String], limit: Int) -> String? {
        var best: (name: String, distance: Int)?
        for name in names {
            let distance = editDistance(word, name, limit: limit)
            if distance <= limit, distance < best?.distance ?? Int.max { best = (name, distance) }
        }
        return best?.name
    }

    /// "; did you mean --name?" (`as`: how the name is written where it
    /// was given), or "" when nothing is near.
    func didYouMean(_ given: String, as spelling: (any AnySetting) -> String?) -> String {
        guard let setting = suggestion(for: given), let text = spelling(setting), text != given else { return "" }
        return "; did you mean \(text)?"
    }

    /// One warning per `HERALD_*` variable of `names` that is neither a
    /// setting of this (layered) table nor one of `otherVariables` or the
    /// tooling's, with the nearest setting's variable when there is one.
    func unknownVariables(_ names: [String]) -> [String] {
        guard layered else { return [] }
        let known = Set(settings.compactMap { $0.environmentName(in: self) }).union(Self.otherVariables)
        return names.filter { name in
            name.hasPrefix("HERALD_") && !known.contains(name) && !Self.toolingPrefixes.contains { name.hasPrefix($0) }
        }.sorted().map { name in
            let hint = suggestion(for: name).map { setting in
                setting.environmentName(in: self).map { "did you mean \($0)?" }
                    ?? "--\(setting.name) is a list: give it as flags or config-file lines"
            }
            return "\(name) is not a setting of `herald \(command)` and is ignored" + (hint.map { "; \($0)" } ?? "")
        }
    }

    /// Lowercase, without `--` or a `HERALD_` prefix, `_` as `-`.
    static func normalized(_ given: String) -> String {
        var text = Substring(given.trimmingSpaces())
        if text.hasPrefix("--") { text = text.dropFirst(2) }
        if text.uppercased().hasPrefix("HERALD_") { text = text.dropFirst(7) }
        return String(text.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    /// Levenshtein distance of `a` and `b`, or `limit + 1` once it is
    /// certainly more than `limit` (names are short; this is not a hot path).
    static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                rowMinimum = min(rowMinimum, current[j])
            }
            if rowMinimum > limit { return limit + 1 }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
