#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A small command-line parser for `herald`'s two subcommands, in place of
// swift-argument-parser (which links FoundationEssentials, ~2 MiB resident).
// It keeps that library's surface: `--name value` and `--name=value`,
// repeatable options, flags, `-h`/`--help`, `herald help <subcommand>`,
// `--version`, `serve` as the default subcommand, the same messages, and
// exit code 64 for usage errors (1 for failures while running).

/// A usage error: printed with the usage line, exit code 64.
struct ValidationError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// One `--name` of a subcommand.
struct OptionSpec {
    enum Kind { case single, repeatable, flag }
    var name: String
    var kind: Kind
    var help: String
    /// Shown as `(default: …)` in help.
    var defaultText: String?

    static func option(_ name: String, _ help: String, default defaultText: String? = nil) -> OptionSpec {
        OptionSpec(name: name, kind: .single, help: help, defaultText: defaultText)
    }
    static func repeatable(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .repeatable, help: help, defaultText: nil)
    }
    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help, defaultText: nil)
    }

    var label: String { kind == .flag ? "--\(name)" : "--\(name) <\(name)>" }
}

/// A subcommand's description for parsing and help.
struct CommandSpec {
    var name: String
    var abstract: String
    var discussion: String?
    var options: [OptionSpec]
}

/// What the command line gave, by option name (values in order).
struct ParsedOptions {
    let command: CommandSpec
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []

    init(command: CommandSpec) { self.command = command }

    mutating func add(_ name: String, _ value: String) { values[name, default: []].append(value) }
    mutating func set(_ name: String) { flags.insert(name) }

    func string(_ name: String) -> String? { values[name]?.last }
    func strings(_ name: String) -> [String]? { values[name] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func int(_ name: String) throws(ValidationError) -> Int? {
        try convert(name, Int.init)
    }

    func double(_ name: String) throws(ValidationError) -> Double? {
        try convert(name, Double.init)
    }

    private func convert<T>(_ name: String, _ make: (String) -> T?) throws(ValidationError) -> T? {
        guard let text = string(name) else { return nil }
        guard let value = make(text) else {
            let spec = command.options.first { $0.name == name }
            var message = "The value '\(text)' is invalid for '--\(name) <\(name)>'"
            if let spec { message += "\nHelp:  \(spec.label)  \(spec.help)" }
            throw ValidationError(message)
        }
        return value
    }
}

enum HeraldCommandLine {
    static let name = "herald"
    static let abstract = "Herald: a push-notification scheduling service (gRPC over HTTP/2)."

    /// What to do with the arguments (after the executable's name).
    enum Action {
        case run(ParsedOptions)
        case printHelp(CommandSpec?)
        case printVersion
    }

    /// Parses the arguments; `commands.first` is the default subcommand.
    static func parse(_ arguments: [String], commands: [CommandSpec]) throws(UsageFailure) -> Action {
        var arguments = arguments[...]
        var command = commands[0]
        if let first = arguments.first {
            if first == "help" {
                let rest = arguments.dropFirst()
                guard let target = rest.first else { return .printHelp(nil) }
                guard let named = commands.first(where: { $0.name == target }) else {
                    throw UsageFailure(message: "Unexpected argument '\(target)'", command: command)
                }
                return .printHelp(named)
            }
            if first == "--version" { return .printVersion }
            if first == "-h" || first == "--help" { return .printHelp(nil) }
            if let named = commands.first(where: { $0.name == first }) {
                command = named
                arguments = arguments.dropFirst()
            }
        }
        var parsed = ParsedOptions(command: command)
        while let argument = arguments.popFirst() {
            if argument == "-h" || argument == "--help" { return .printHelp(command) }
            if argument == "--version" { return .printVersion }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw UsageFailure(message: "Unexpected argument '\(argument)'", command: command)
            }
            let body = argument.dropFirst(2)
            let name: String
            var inline: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inline = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
            }
            guard let spec = command.options.first(where: { $0.name == name }) else {
                throw UsageFailure(message: "Unknown option '--\(name)'", command: command)
            }
            if spec.kind == .flag {
                if let inline {
                    throw UsageFailure(
                        message: "The option '--\(name)' does not take any value, but '\(inline)' was specified.",
                        command: command)
                }
                parsed.set(name)
                continue
            }
            if let inline {
                parsed.add(name, inline)
            } else if let next = arguments.first, !next.hasPrefix("-") {
                parsed.add(name, next)
                arguments = arguments.dropFirst()
            } else {
                throw UsageFailure(
                    message: "Missing value for '\(spec.label)'\nHelp:  \(spec.label)  \(spec.help)", command: command)
            }
        }
        return .run(parsed)
    }

    /// A usage error and the subcommand it concerns.
    struct UsageFailure: Error {
        var message: String
        var command: CommandSpec
    }

    static func usageText(_ error: String, command: CommandSpec) -> String {
        "Error: \(error)\nUsage: \(name) \(command.name) <options>\n  See '\(name) \(command.name) --help' for more information.\n"
    }

    static func help(_ command: CommandSpec?, commands: [CommandSpec]) -> String {
        guard let command else {
            var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(name) <subcommand>\n\nOPTIONS:\n"
            text += row("  --version", "Show the version.")
            text += row("  -h, --help", "Show help information.")
            text += "\nSUBCOMMANDS:\n"
            for (index, sub) in commands.enumerated() {
                text += row("  " + sub.name + (index == 0 ? " (default)" : ""), sub.abstract)
            }
            text += "\n  See '\(name) help <subcommand>' for detailed help.\n"
            return text
        }
        var text = "OVERVIEW: \(command.abstract)\n\n"
        if let discussion = command.discussion { text += discussion + "\n\n" }
        text += "USAGE: \(name) \(command.name) <options>\n\nOPTIONS:\n"
        for option in command.options {
            var help = option.help
            if let defaultText = option.defaultText { help += " (default: \(defaultText))" }
            text += row("  " + option.label, help)
        }
        text += row("  --version", "Show the version.")
        text += row("  -h, --help", "Show help information.")
        return text
    }

    /// A help row: the label, then the text wrapped to 79 columns from column 26.
    private static func row(_ label: String, _ help: String) -> String {
        let indent = 26, width = 79
        var lines: [String] = []
        var line = ""
        for word in help.split(separator: " ") {
            if !line.isEmpty && indent + line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        let pad = String(repeating: " ", count: indent)
        var text: String
        if label.count < indent {
            text = label + String(repeating: " ", count: indent - label.count) + (lines.first ?? "") + "\n"
            lines = Array(lines.dropFirst())
        } else {
            text = label + "\n"
        }
        for rest in lines { text += pad + rest + "\n" }
        return text
    }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    writeUnbuffered(text, to: 2)
}

/// A default as help shows it; none for an empty string.
func defaultText(_ value: some CustomStringConvertible) -> String? {
    let text = value.description
    return text.isEmpty ? nil : text
}
