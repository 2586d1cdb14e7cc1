import AppStore

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

/// The subjects a unit of work has read, by user id and by subject.
struct Subjects: Sendable {
    private(set) var byUser: [String: Subject] = [:]
    private(set) var bySubject: [String: Subject] = [:]
    /// Minted or keyed here, to be written after the append that uses them.
    var unsaved: [Subject] = []

    init(_ subjects: some Sequence<Subject> = []) {
        for subject in subjects { insert(subject) }
    }

    mutating func insert(_ subject: Subject) {
        byUser[subject.userId] = subject
        bySubject[subject.subject] = subject
    }

    mutating func merge(_ other: Subjects) {
        for subject in other.byUser.values { insert(subject) }
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
