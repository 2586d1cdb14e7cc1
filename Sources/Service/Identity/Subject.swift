import AppStore
import Ledger

/// A user id's opaque subject and the key that seals the personal parts of its events
/// (`identity.subjects`, migration 0047; docs/architecture.md, "Erasure on an append-only log").
/// The user's stream is `user:<subject>`; the id itself is kept only in that row.
struct Subject: Sendable, Hashable {
    var userId: String
    var subject: String
    /// Nil only for a legacy subject (a user who wrote before 0047) not yet written since.
    var key: [UInt8]?

    /// A fresh subject (`s_` and 128 random bits) and key, for a user without one.
    static func minted(for userId: String) -> Subject {
        Subject(userId: userId, subject: "s_" + Hex.encode(Sealing.randomBytes(16)), key: Sealing.newKey())
    }

    /// The stored name of the user's stream.
    var stream: String { "user:" + subject }
}

/// An appAccountToken's opaque subject (`t_` and 128 random bits) and the key that seals the
/// signed payloads carrying it (`identity.tokens`, migration 0049): a token names a person as a
/// user id does (the app chose it for them), so the log keeps it only behind its subject.
struct TokenSubject: Sendable, Hashable {
    /// Lowercased.
    var token: String
    var subject: String
    var key: [UInt8]

    static func minted(for token: String) -> TokenSubject {
        TokenSubject(token: token, subject: "t_" + Hex.encode(Sealing.randomBytes(16)), key: Sealing.newKey())
    }

    /// A stored token names a subject (a token is a UUID: it never starts so).
    static func isSubject(_ stored: String) -> Bool { stored.hasPrefix("t_") }
}

/// The subjects a unit of work has read, by user id and by subject, and those of tokens.
struct Subjects: Sendable {
    private(set) var byUser: [String: Subject] = [:]
    private(set) var bySubject: [String: Subject] = [:]
    /// Minted or keyed here, to be written after the append that uses them.
    var unsaved: [Subject] = []
    /// Tokens (lowercased) and their subjects.
    private(set) var byToken: [String: TokenSubject] = [:]
    private(set) var byTokenSubject: [String: TokenSubject] = [:]
    var unsavedTokens: [TokenSubject] = []

    init(_ subjects: some Sequence<Subject> = [], tokens: some Sequence<TokenSubject> = []) {
        for subject in subjects { insert(subject) }
        for token in tokens { insert(token) }
    }

    mutating func insert(_ subject: Subject) {
        byUser[subject.userId] = subject
        bySubject[subject.subject] = subject
    }

    mutating func insert(_ token: TokenSubject) {
        byToken[token.token] = token
        byTokenSubject[token.subject] = token
    }

    mutating func merge(_ other: Subjects) {
        for subject in other.byUser.values { insert(subject) }
        for token in other.byToken.values { insert(token) }
    }

    /// `event` with each token it carries as the token's subject (every one must be here).
    func storingTokens(_ event: LedgerEvent) -> LedgerEvent {
        event.mappingTokens { byToken[$0.lowercased()]?.subject ?? $0 }
    }

    /// `event` with each token subject it carries as the token again; an unknown subject (an
    /// erased person's token) stays the opaque id it is, and a token stored in clear (before
    /// 0049) stays itself.
    func restoringTokens(_ event: LedgerEvent) -> LedgerEvent {
        event.mappingTokens { byTokenSubject[$0]?.token ?? $0 }
    }
}

/// Lowercase hex, for keys through SQL (`decode(…, 'hex')`) and subject ids.
enum Hex {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hex digits (an optional `\x` prefix, as PostgreSQL prints bytea) to bytes; nil if not hex.
    static func decode(_ text: String) -> [UInt8]? {
        var digits = Array(text.utf8)
        if digits.starts(with: Array("\\x".utf8)) { digits.removeFirst(2) }
        guard digits.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
