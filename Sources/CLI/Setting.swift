import Infrastructure

/// One setting of iap-ledger: the flag and/or environment variable that give it, what it is for,
/// and the one rule its text must follow. Every variable the binary reads for itself is read
/// through one of these (the table is `ServiceSettings`), so each is parsed and worded in one
/// place whichever command reads it.
///
/// A flag wins over the variable. An empty variable counts as unset, as it always has: a unit
/// file's `PORT=` must not make serve refuse to start.
package struct Setting<Value: Sendable>: Sendable {
    /// `port` for `--port`; nil: no flag.
    package var flag: String?
    /// `PORT`; nil: no variable.
    package var variable: String?
    /// The flag's value in the usage text: `N`, `FILE`.
    package var placeholder: String
    /// What it is for and its default: the line the usage text prints.
    package var about: String
    /// What a valid value is, as the usage text and the error say it (`0…65535`); nil: any text.
    package var rule: String?
    package var parse: @Sendable (String) -> Value?
    /// The rejected text as the error shows it: quoted, unless echoing it would be unwise.
    package var shown: @Sendable (String) -> String = { "\"\($0)\"" }

    /// Who gave it (`--port` or `PORT`) and the text, nil when neither did.
    package func given(flags: [String: String], environment: [String: String]) -> (source: String, text: String)? {
        if let flag, let text = flags[flag] { return ("--\(flag)", text) }
        if let variable, let text = environment[variable], !text.isEmpty { return (variable, text) }
        return nil
    }

    /// The value, nil when not given; a bad one is an error that names its source and the rule,
    /// worded as every other: `PORT must be 0…65535, got "eighty"`.
    package func value(
        flags: [String: String] = [:], environment: [String: String]
    ) throws(SettingError) -> Value? {
        guard let (source, text) = given(flags: flags, environment: environment) else { return nil }
        guard let value = parse(text) else {
            throw SettingError(description: "\(source) must be \(rule ?? "given"), got \(shown(text))")
        }
        return value
    }
}

extension Setting where Value == String {
    /// Any text: a path, an address, a connection string.
    package init(flag: String? = nil, variable: String? = nil, placeholder: String = "", about: String) {
        self.init(
            flag: flag, variable: variable, placeholder: placeholder, about: about, rule: nil, parse: { $0 })
    }

    /// The text given, nil when none: any text is valid, so there is nothing to refuse.
    package func text(flags: [String: String] = [:], environment: [String: String]) -> String? {
        given(flags: flags, environment: environment)?.text
    }
}

extension Setting where Value == Int {
    /// A whole number within `range`, written as digits.
    package static func number(
        flag: String? = nil, variable: String? = nil, in range: ClosedRange<Int>, about: String
    ) -> Setting {
        Setting(
            flag: flag, variable: variable, placeholder: "N", about: about,
            rule: "\(range.lowerBound)…\(range.upperBound)",
            parse: { text in Int(text).flatMap { range.contains($0) ? $0 : nil } })
    }
}

/// One bad setting, as one line (`ServiceSettings.load` joins several into one usage error).
package struct SettingError: Error, CustomStringConvertible, Sendable {
    package var description: String
}
