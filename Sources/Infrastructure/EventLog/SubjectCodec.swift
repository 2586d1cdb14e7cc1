import AppStore
import JSON
import Ledger

/// How a user's events are stored (docs/architecture.md, "Erasure on an append-only log"): on
/// the stream `user:<subject>`, every user id they name replaced by that user's subject, and
/// their personal parts sealed with the owner's key in one `sealed` field (AES-256-GCM, bound
/// to the event's type and stream). What SQL over the log reads stays in clear: amounts,
/// currencies, entitlements, instants, chain ids, subjects. Such an event is schema version 2;
/// version 1 is a user event written before subjects (its ids are user ids, nothing sealed),
/// read as it always was. Chain and other streams are stored as the domain encodes them.
package enum SubjectCodec {
    package static let sealedSchemaVersion = 2

    /// The fields each user event keeps in clear; every other field is sealed (a field added
    /// later is personal until it is listed here). `appAccountToken` is a token subject by then
    /// (`Subjects.storingTokens`), which the token index's rebuild reads.
    package static let clearFields: [String: Set<String>] = [
        "ChainClaimed": ["userId", "originalTransactionId", "from", "at"],
        "ChainReleased": ["userId", "originalTransactionId", "to", "at"],
        "BalanceDebited": ["userId", "currency", "amount", "balanceAfter", "at"],
        "BalanceCredited": ["userId", "currency", "amount", "at"],
        "EntitlementGranted": ["userId", "entitlement", "expiresAt", "at"],
        "EntitlementRevoked": ["userId", "entitlement", "at"],
        "PromotionalGranted": ["userId", "grantId", "entitlement", "expiresAt", "duration", "at"],
        "PromotionalRevoked": ["userId", "grantId", "entitlement", "at"],
        "AppAccountTokenRegistered": ["userId", "appAccountToken", "minted", "at"],
        "AppleAccountShared": ["userId", "appTransactionId", "sharedWith", "at"],
        "ConsentRescinded": ["userId", "appTransactionId", "at"],
        "AliasMerged": ["userId", "alias", "at", "movedChains"],
        "MergedInto": ["userId", "target", "at"],
        "SubjectErased": ["userId", "at"],
    ]

    /// The stored stream, schema version and data of `event`. Every user it names must be in
    /// `subjects`, its owner with a key (`LedgerRepository.subjects(for:on:)` sees to both).
    package static func stored(_ decided: LedgerEvent, subjects: Subjects) throws(ServiceError)
        -> (stream: String, schemaVersion: Int, data: [UInt8])
    {
        let event = subjects.storingTokens(decided)
        guard case .user(let userId) = event.route else { return (event.stream, event.schemaVersion, event.encode()) }
        guard let owner = subjects.byUser[userId], let key = owner.key else {
            throw .internalError("no subject with a key for the user of a \(event.typeName) event")
        }
        var unknown = false
        let named = event.mappingUserIds { id in
            guard let subject = subjects.byUser[id] else {
                unknown = true
                return id
            }
            return subject.subject
        }
        guard !unknown else { throw .internalError("a \(event.typeName) event names a user without a subject") }
        guard case .object(var fields) = try? JSONValue.parse(named.encode()) else {
            throw .internalError("a \(event.typeName) event did not encode as an object")
        }
        if case .aliasMerged(_, _, let moved, _) = event {
            // Which chains moved is no one's secret, and an erased target's fold still needs it.
            fields["movedChains"] = .array(moved.chains.sorted().map(JSONValue.string))
        }
        let clear = clearFields[event.typeName] ?? ["userId"]
        var personal: [String: JSONValue] = [:]
        for (name, value) in fields where !clear.contains(name) {
            personal[name] = value
            fields[name] = nil
        }
        if !personal.isEmpty {
            do {
                fields["sealed"] = .string(
                    try Sealing.sealText(
                        JSONValue.object(personal).serialized(), key: key,
                        associatedData: associatedData(type: event.typeName, stream: owner.stream)))
            } catch {
                throw .internalError("sealing a \(event.typeName) event failed: \(error)")
            }
        }
        return (owner.stream, sealedSchemaVersion, JSONValue.object(fields).serialized())
    }

    /// The signed payload an event was derived from, as stored: sealed with the key of the token
    /// it carries (the event's own, or a notification's nested transaction's), so that erasing
    /// the token's person leaves it unreadable; in clear when it carries none. Sealed text is
    /// `sealed:` and base64, bound to the event's type and stored stream.
    package static func storedPayload(_ payload: String, of event: LedgerEvent, stream: String, subjects: Subjects)
        throws(ServiceError) -> String
    {
        var token = event.tokens.first?.lowercased()
        if token == nil, case .notificationReceived = event { token = JWSClaims.appAccountToken(in: payload) }
        guard let token else { return payload }
        guard let subject = subjects.byToken[token] else {
            throw .internalError("no subject for the token of a \(event.typeName) payload")
        }
        do {
            return sealedPayloadPrefix
                + (try Sealing.sealText(
                    Array(payload.utf8), key: subject.key,
                    associatedData: associatedData(type: event.typeName, stream: stream)))
        } catch {
            throw .internalError("sealing a \(event.typeName) payload failed: \(error)")
        }
    }

    package static let sealedPayloadPrefix = "sealed:"

    /// A stored user event of schema version 2 as the domain reads it, still naming subjects
    /// (`restoringUserIds` turns them back into ids). Without its owner's key (an erased
    /// person) the event keeps what was in clear, with empty personal parts where the fold
    /// needs them (debits and credits keep their amounts: balances and money stay), and the
    /// events that are nothing without their sealed part give nil.
    package static func unsealed(type: String, stream: String, data: [UInt8], seq: Int64, key: [UInt8]?)
        throws(ServiceError) -> LedgerEvent?
    {
        guard case .object(var fields) = try? JSONValue.parse(data) else {
            throw .internalError("event \(seq) of \(stream) is not a JSON object")
        }
        if case .string(let sealed)? = fields.removeValue(forKey: "sealed") {
            if let key {
                let opened: [UInt8]
                do {
                    opened = try Sealing.openText(
                        sealed, key: key, associatedData: associatedData(type: type, stream: stream))
                } catch {
                    throw .internalError("event \(seq) of \(stream) does not open with its subject's key")
                }
                guard case .object(let personal)? = try? JSONValue.parse(opened) else {
                    throw .internalError("event \(seq) of \(stream) sealed no object")
                }
                fields.merge(personal) { clear, _ in clear }
            } else {
                if type == "AliasMerged" { return erasedMerge(fields) }
                guard let placeholders = erasedParts(type: type, seq: seq) else { return nil }
                fields.merge(placeholders) { clear, _ in clear }
            }
        }
        do {
            return try LedgerEvent.decode(type: type, schemaVersion: 1, data: JSONValue.object(fields).serialized())
        } catch {
            throw .internalError("event \(seq) of \(stream) does not decode: \(error)")
        }
    }

    /// The subject a stored sealed event belongs to (its clear `userId`), without opening it.
    package static func owner(ofStored data: [UInt8]) -> String? {
        (try? JSONValue.parse(data))?["userId"]?.stringValue
    }

    /// `event` naming user ids again: each subject in `subjects` becomes its id, and a subject
    /// no longer there (erased) stays the opaque id it is.
    package static func restoringUserIds(_ event: LedgerEvent, subjects: Subjects) -> LedgerEvent {
        event.mappingUserIds { subjects.bySubject[$0]?.userId ?? $0 }
    }

    /// An erased target's merge: the chains it took over (from the clear `movedChains`), nothing
    /// personal; nil for a merge stored without them.
    private static func erasedMerge(_ fields: [String: JSONValue]) -> LedgerEvent? {
        guard let userId = fields["userId"]?.stringValue, let alias = fields["alias"]?.stringValue,
            let at = fields["at"]?.int64Value, let chains = fields["movedChains"]?.arrayValue
        else { return nil }
        var moved = Account.initial
        for case .string(let otid) in chains {
            Account.evolve(&moved, .chainClaimed(userId: alias, originalTransactionId: otid, from: nil, at: at))
        }
        return .aliasMerged(userId: userId, alias: alias, moved: moved, at: at)
    }

    /// What stands for an erased person's sealed part, per event type the fold still needs.
    private static func erasedParts(type: String, seq: Int64) -> [String: JSONValue]? {
        switch type {
        case "BalanceDebited", "BalanceCredited":
            // Distinct per event, so that two erased debits never read as one idempotent retry.
            ["idempotencyKey": .string("erased:\(seq)"), "reason": ""]
        case "EntitlementGranted", "EntitlementRevoked", "PromotionalGranted": ["reason": ""]
        default: nil
        }
    }

    /// Binds a sealed part to its event: moved to another event or stream, it does not open.
    private static func associatedData(type: String, stream: String) -> [UInt8] {
        Array(type.utf8) + [0x0A] + Array(stream.utf8)
    }
}
