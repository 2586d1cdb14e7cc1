import AppStore
import Infrastructure
import JSON
import Ledger

/// The one-time log migration's decisions (docs/architecture.md, "Erasure on an append-only
/// log", "Events already written"), without I/O: given every subject and token subject as
/// they are, it says how each stored event and change must be stored instead so that nothing
/// written before subjects (migration 0047) and token subjects (0049) keeps a user id, a token
/// or personal text in clear. `LogMigration` reads the rows, asks, and writes the answers.
///
/// - Each legacy user (their subject is their id) gets a minted subject and key: their stream
///   becomes `user:<subject>` and every event of it is stored as new writes are (schema
///   version 2, sealed). Any other user's event naming them is stored again with the new
///   subject (sealed again with its owner's key).
/// - A token stored in clear (an Apple fact's, a registration's) becomes its token subject,
///   minted when new; a signed payload carrying a token is sealed with its key.
/// - A change stored in clear is sealed for its owner; a sealed change naming a legacy user is
///   sealed again; a clear change of a person erased since is emptied.
/// - An erased person's events (no key) cannot be opened: only their clear references to legacy
///   users are renamed, and a clear token of theirs becomes an opaque id nobody resolves.
package struct LogSealing {
    /// One row of `es.events`, as stored.
    package struct StoredEvent: Sendable, Equatable {
        package var seq: Int64
        package var stream: String
        package var type: String
        package var schemaVersion: Int
        package var data: [UInt8]
        package var payload: String?

        package init(
            seq: Int64, stream: String, type: String, schemaVersion: Int, data: [UInt8], payload: String? = nil
        ) {
            self.seq = seq
            self.stream = stream
            self.type = type
            self.schemaVersion = schemaVersion
            self.data = data
            self.payload = payload
        }
    }

    /// One row of `changes.feed`: the columns that can name a person.
    package struct StoredChange: Sendable, Equatable {
        package var seq: Int64
        package var type: String
        package var userId: String?
        package var details: String
        package var customer: String
    }

    /// The subjects as they are (what stored rows name).
    package let old: Subjects
    /// The subjects as they will be: legacy users with their minted subject, new token subjects.
    package private(set) var new: Subjects
    /// Legacy users' new subjects, by their old subject (their user id).
    package private(set) var renamed: [String: Subject] = [:]
    /// Token subjects minted for tokens stored in clear, to be written with the rows.
    package private(set) var mintedTokens: [TokenSubject] = []

    package init(subjects: Subjects) {
        old = subjects
        var current: [Subject] = []
        for subject in subjects.byUser.values {
            guard subject.subject == subject.userId || subject.key == nil else {
                current.append(subject)
                continue
            }
            let fresh = Subject.minted(for: subject.userId)
            renamed[subject.subject] = fresh
            current.append(fresh)
        }
        new = Subjects(current, tokens: subjects.byToken.values)
    }

    /// How `row` must be stored instead; nil when it stays as it is.
    package mutating func rewrite(_ row: StoredEvent) throws(ServiceError) -> StoredEvent? {
        guard LedgerEvent.typeNames.contains(row.type) else { return nil }
        guard row.stream.hasPrefix(LedgerRoute.userPrefix) else { return try rewriteFact(row) }
        guard let opened = try Self.opened(row, subjects: old) else { return try rewriteErased(row) }
        let name = String(row.stream.dropFirst(LedgerRoute.userPrefix.count))
        let event = old.restoringTokens(SubjectCodec.restoringUserIds(opened, subjects: old))
        let needed =
            row.schemaVersion != SubjectCodec.sealedSchemaVersion || renamed[name] != nil
            || opened.tokens.contains { !TokenSubject.isSubject($0) } || event.userIds.contains { renamed[$0] != nil }
        guard needed else { return nil }
        guard row.payload == nil else {
            throw .internalError("event \(row.seq) of a user's stream carries a signed payload; none ever did")
        }
        for token in event.tokens { _ = tokenSubject(for: token) }
        // An erased person named by the event stays the opaque subject it already is.
        var subjects = new
        for id in event.userIds where subjects.byUser[id] == nil {
            subjects.insert(Subject(userId: id, subject: id, key: nil))
        }
        let stored = try SubjectCodec.stored(event, subjects: subjects)
        return StoredEvent(
            seq: row.seq, stream: stored.stream, type: row.type, schemaVersion: stored.schemaVersion, data: stored.data,
            payload: nil)
    }

    /// A stored user event as the domain reads it, still naming what the row names (subjects
    /// for version 2, ids for version 1); nil for an erased person's sealed event.
    package static func opened(_ row: StoredEvent, subjects: Subjects) throws(ServiceError) -> LedgerEvent? {
        guard row.schemaVersion == SubjectCodec.sealedSchemaVersion else {
            do {
                return try LedgerEvent.decode(type: row.type, schemaVersion: row.schemaVersion, data: row.data)
            } catch {
                throw .internalError("event \(row.seq) of \(row.stream) does not decode: \(error)")
            }
        }
        guard let owner = SubjectCodec.owner(ofStored: row.data) else {
            throw .internalError("event \(row.seq) of \(row.stream) is sealed but names no subject")
        }
        guard let key = subjects.bySubject[owner]?.key else { return nil }
        return try SubjectCodec.unsealed(type: row.type, stream: row.stream, data: row.data, seq: row.seq, key: key)
    }

    /// An Apple fact (a chain's or an unattached notification): its clear token becomes the
    /// token's subject, and a clear payload carrying a token is sealed with the token's key.
    /// Only the token field changes in the stored data: everything else stays byte for byte.
    private mutating func rewriteFact(_ row: StoredEvent) throws(ServiceError) -> StoredEvent? {
        guard case .object(var fields)? = try? JSONValue.parse(row.data) else {
            throw .internalError("event \(row.seq) of \(row.stream) is not a JSON object")
        }
        var rewritten = row
        if case .string(let token)? = fields["appAccountToken"], !TokenSubject.isSubject(token) {
            fields["appAccountToken"] = .string(tokenSubject(for: token).subject)
            rewritten.data = JSONValue.object(fields).serialized()
        }
        if let payload = row.payload, !payload.hasPrefix(SubjectCodec.sealedPayloadPrefix) {
            let event: LedgerEvent
            do {
                event = new.restoringTokens(
                    try LedgerEvent.decode(type: row.type, schemaVersion: row.schemaVersion, data: rewritten.data))
            } catch {
                throw .internalError("event \(row.seq) of \(row.stream) does not decode: \(error)")
            }
            var carried = event.tokens.first
            if carried == nil, case .notificationReceived = event { carried = JWSClaims.appAccountToken(in: payload) }
            if let carried {
                _ = tokenSubject(for: carried)
                rewritten.payload = try SubjectCodec.storedPayload(
                    payload, of: event, stream: row.stream, subjects: new)
            }
        }
        return rewritten == row ? nil : rewritten
    }

    /// An erased person's sealed event: what is in clear is all there is to rename.
    private func rewriteErased(_ row: StoredEvent) throws(ServiceError) -> StoredEvent? {
        guard case .object(var fields)? = try? JSONValue.parse(row.data) else {
            throw .internalError("event \(row.seq) of \(row.stream) is not a JSON object")
        }
        var changed = false
        for name in ["userId", "from", "to", "sharedWith", "alias", "target"] {
            guard case .string(let id)? = fields[name], let fresh = renamed[id] else { continue }
            fields[name] = .string(fresh.subject)
            changed = true
        }
        if case .string(let token)? = fields["appAccountToken"], !TokenSubject.isSubject(token) {
            // Their token in clear, from before token subjects: an id nobody can resolve now.
            fields["appAccountToken"] = .string(TokenSubject.minted(for: token).subject)
            changed = true
        }
        guard changed else { return nil }
        var rewritten = row
        rewritten.data = JSONValue.object(fields).serialized()
        return rewritten
    }

    /// The subject of `token`, minted when it has none yet.
    private mutating func tokenSubject(for token: String) -> TokenSubject {
        let lowercased = token.lowercased()
        if let known = new.byToken[lowercased] { return known }
        let minted = TokenSubject.minted(for: lowercased)
        new.insert(minted)
        mintedTokens.append(minted)
        return minted
    }

    /// How `row` must be stored instead; nil when it stays as it is.
    package func rewrite(_ row: StoredChange) throws(ServiceError) -> StoredChange? {
        guard let owner = row.userId else { return nil }  // a TEST change names nobody
        var rewritten = row
        if ChangeSealing.sealedText(row.details) != nil {
            guard let subject = old.bySubject[owner], let key = subject.key else { return nil }  // erased already
            guard
                let open = ChangeSealing.opened(details: row.details, customer: row.customer, subject: owner, key: key)
            else { throw .internalError("change \(row.seq) does not open with its subject's key") }
            let rename = { (id: String) -> String in renamed[id]?.subject ?? id }
            let details = ChangeSealing.renamingTransferSides(open.details, type: row.type, rename)
            let customer = CustomerText.mappingSameAppleAccountAs(open.customer, rename)
            let target = renamed[owner] ?? subject
            guard target.subject != owner || details != open.details || customer != open.customer else { return nil }
            guard let targetKey = target.key else {
                throw .internalError("no key for the subject of change \(row.seq)")
            }
            let sealed = try ChangeSealing.seal(
                details: details, customer: customer, subject: target.subject, key: targetKey)
            rewritten.userId = target.subject
            (rewritten.details, rewritten.customer) = (sealed.details, sealed.customer)
            return rewritten
        }
        guard let target = new.byUser[owner], let key = target.key else {
            // A clear change of someone erased since: it names them, so it keeps nothing.
            rewritten.userId = Subject.minted(for: owner).subject
            (rewritten.details, rewritten.customer) = ("{}", "{}")
            return rewritten
        }
        // Another user named inside who has no subject any more was erased since: opaque now.
        let rename = { (id: String) -> String in new.byUser[id]?.subject ?? Subject.minted(for: id).subject }
        let sealed = try ChangeSealing.seal(
            details: ChangeSealing.renamingTransferSides(row.details, type: row.type, rename),
            customer: CustomerText.mappingSameAppleAccountAs(row.customer, rename), subject: target.subject, key: key)
        rewritten.userId = target.subject
        (rewritten.details, rewritten.customer) = (sealed.details, sealed.customer)
        return rewritten
    }
}
