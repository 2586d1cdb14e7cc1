import AppStore
import Ledger

/// A user id's opaque subject and the key that seals the personal parts of its events
/// (`identity.subjects`, migration 0047; docs/architecture.md, "Erasure on an append-only log").
/// The user's stream is `user:<subject>`; the id itself is kept only in that row.
package struct Subject: Sendable, Hashable {
    package var userId: String
    package var subject: String
    /// Nil only for a legacy subject (a user who wrote before 0047) not yet written since.
    package var key: [UInt8]?

    package init(userId: String, subject: String, key: [UInt8]?) {
        self.userId = userId
        self.subject = subject
        self.key = key
    }

    /// A fresh subject (`s_` and 128 random bits) and key, for a user without one.
    package static func minted(for userId: String) -> Subject {
        Subject(userId: userId, subject: "s_" + Hex.encode(Sealing.randomBytes(16)), key: Sealing.newKey())
    }

    /// The stored name of the user's stream.
    package var stream: String { "user:" + subject }
}

/// An appAccountToken's opaque subject (`t_` and 128 random bits) and the key that seals the
/// signed payloads carrying it (`identity.tokens`, migration 0049): a token names a person as a
/// user id does (the app chose it for them), so the log keeps it only behind its subject.
package struct TokenSubject: Sendable, Hashable {
    /// Lowercased.
    package var token: String
    package var subject: String
    package var key: [UInt8]

    package init(token: String, subject: String, key: [UInt8]) {
        self.token = token
        self.subject = subject
        self.key = key
    }

    package static func minted(for token: String) -> TokenSubject {
        TokenSubject(token: token, subject: "t_" + Hex.encode(Sealing.randomBytes(16)), key: Sealing.newKey())
    }

    /// A stored token names a subject (a token is a UUID: it never starts so).
    package static func isSubject(_ stored: String) -> Bool { stored.hasPrefix("t_") }
}

/// The subjects a unit of work has read, by user id and by subject, and those of tokens.
package struct Subjects: Sendable {
    package private(set) var byUser: [String: Subject] = [:]
    package private(set) var bySubject: [String: Subject] = [:]
    /// Minted or keyed here, to be written after the append that uses them.
    package var unsaved: [Subject] = []
    /// Tokens (lowercased) and their subjects.
    package private(set) var byToken: [String: TokenSubject] = [:]
    package private(set) var byTokenSubject: [String: TokenSubject] = [:]
    package var unsavedTokens: [TokenSubject] = []

    package init(_ subjects: some Sequence<Subject> = [], tokens: some Sequence<TokenSubject> = []) {
        for subject in subjects { insert(subject) }
        for token in tokens { insert(token) }
    }

    /// Room for `count` more subjects (a replay reads them all at once: growing two tables of
    /// 100k keys step by step rehashed each of them several times).
    package mutating func reserveCapacity(_ count: Int) {
        byUser.reserveCapacity(byUser.count + count)
        bySubject.reserveCapacity(bySubject.count + count)
    }

    package mutating func insert(_ subject: Subject) {
        byUser[subject.userId] = subject
        bySubject[subject.subject] = subject
    }

    package mutating func insert(_ token: TokenSubject) {
        byToken[token.token] = token
        byTokenSubject[token.subject] = token
    }

    package mutating func merge(_ other: Subjects) {
        for subject in other.byUser.values { insert(subject) }
        for token in other.byToken.values { insert(token) }
    }

    /// `event` with each token it carries as the token's subject (every one must be here).
    package func storingTokens(_ event: LedgerEvent) -> LedgerEvent {
        event.mappingTokens { byToken[$0.lowercased()]?.subject ?? $0 }
    }

    /// `event` with each token subject it carries as the token again; an unknown subject (an
    /// erased person's token) stays the opaque id it is, and a token stored in clear (before
    /// 0049) stays itself.
    package func restoringTokens(_ event: LedgerEvent) -> LedgerEvent {
        event.mappingTokens { byTokenSubject[$0]?.token ?? $0 }
    }
}
