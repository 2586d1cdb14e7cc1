import JSON

/// Why stored event data could not be read back.
public struct EventDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var type: String
    public var schemaVersion: Int
    public var message: String
    public var description: String { "cannot decode \(type) v\(schemaVersion): \(message)" }
}

extension LedgerEvent {
    /// The stored `data` column: a JSON object with stable field names (Apple's names for
    /// Apple facts), absent optionals omitted.
    public func encode() -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        write(to: &writer)
        return writer.bytes
    }

    /// Writes the event's data object.
    public func write(to w: inout JSONWriter) {
        w.beginObject()
        switch self {
        case .transactionRecorded(let t): t.writeFields(to: &w)
        case .renewalInfoRecorded(let r): r.writeFields(to: &w)
        case .notificationReceived(let n): n.writeFields(to: &w)
        case .consumptionAnswered(let answer): answer.writeFields(to: &w)
        case .retentionAnswered(let answer): answer.writeFields(to: &w)
        case .renewalExtensionRequested(let request): request.writeFields(to: &w)
        case .promotionalGranted(let grant): grant.writeFields(to: &w)
        case .promotionalRevoked(let revocation): revocation.writeFields(to: &w)
        case .appAccountTokenRegistered, .consentRescinded, .appleAccountShared: writeIdentityFields(to: &w)
        case .aliasMerged, .mergedInto: writeMergeFields(to: &w)
        case .subjectErased(let userId, let at):
            w.field("userId", userId)
            w.field("at", at)
        case .chainClaimed(let userId, let otid, let from, let at):
            w.key("userId")
            w.string(userId)
            w.key("originalTransactionId")
            w.string(otid)
            if let from {
                w.key("from")
                w.string(from)
            }
            w.key("at")
            w.int(at)
        case .chainReleased(let userId, let otid, let to, let at):
            w.key("userId")
            w.string(userId)
            w.key("originalTransactionId")
            w.string(otid)
            w.key("to")
            w.string(to)
            w.key("at")
            w.int(at)
        case .balanceDebited(let userId, let currency, let amount, let key, let reason, let balanceAfter, let at):
            w.key("userId")
            w.string(userId)
            w.key("currency")
            w.string(currency)
            w.key("amount")
            w.int(amount)
            w.key("idempotencyKey")
            w.string(key)
            w.key("reason")
            w.string(reason)
            w.key("balanceAfter")
            w.int(balanceAfter)
            w.key("at")
            w.int(at)
        case .balanceCredited(let userId, let currency, let amount, let key, let reason, let at):
            w.key("userId")
            w.string(userId)
            w.key("currency")
            w.string(currency)
            w.key("amount")
            w.int(amount)
            w.key("idempotencyKey")
            w.string(key)
            w.key("reason")
            w.string(reason)
            w.key("at")
            w.int(at)
        case .entitlementGranted(let userId, let entitlement, let reason, let expiresAt, let at):
            w.key("userId")
            w.string(userId)
            w.key("entitlement")
            w.string(entitlement)
            w.key("reason")
            w.string(reason)
            if let expiresAt {
                w.key("expiresAt")
                w.int(expiresAt)
            }
            w.key("at")
            w.int(at)
        case .entitlementRevoked(let userId, let entitlement, let reason, let at):
            w.key("userId")
            w.string(userId)
            w.key("entitlement")
            w.string(entitlement)
            w.key("reason")
            w.string(reason)
            w.key("at")
            w.int(at)
        }
        w.endObject()
    }

    /// Reads a stored event back from its `type`, `schema_ver` and `data`.
    public static func decode(
        type: String, schemaVersion: Int, data: some Collection<UInt8>
    ) throws(EventDecodingError) -> LedgerEvent {
        guard schemaVersion == 1 else {
            throw EventDecodingError(type: type, schemaVersion: schemaVersion, message: "unknown schema version")
        }
        // The one event with nested data (the moved account): the flat readers do not read it.
        if type == "AliasMerged" { return try aliasMerged(schemaVersion: schemaVersion, data: data) }
        let values: [EventValue?]
        if let fast = data.withContiguousStorageIfAvailable(FlatObjectReader.read), let fast {
            values = fast
        } else {
            values = try slowValues(type: type, schemaVersion: schemaVersion, data: data)
        }
        var fields = Fields(values: values, type: type, schemaVersion: schemaVersion)
        return try make(type: type, schemaVersion: schemaVersion, fields: &fields)
    }

    /// The event of `type` from its decoded fields.
    static func make(type: String, schemaVersion: Int, fields: inout Fields) throws(EventDecodingError) -> LedgerEvent {
        let event: LedgerEvent
        switch type {
        case "TransactionRecorded": event = .transactionRecorded(try Transaction(fields: &fields))
        case "RenewalInfoRecorded": event = .renewalInfoRecorded(try RenewalInfo(fields: &fields))
        case "NotificationReceived": event = .notificationReceived(try NotificationFact(fields: &fields))
        case "ConsumptionAnswered": event = .consumptionAnswered(try ConsumptionAnswer(fields: &fields))
        case "RetentionRequestAnswered": event = .retentionAnswered(try RetentionAnswer(fields: &fields))
        case "RenewalExtensionRequested": event = .renewalExtensionRequested(try RenewalExtension(fields: &fields))
        case "PromotionalGranted": event = .promotionalGranted(try PromotionalGrant(fields: &fields))
        case "PromotionalRevoked": event = .promotionalRevoked(try PromotionalRevocation(fields: &fields))
        case "AppAccountTokenRegistered", "ConsentRescinded", "AppleAccountShared":
            event = try identityEvent(type: type, schemaVersion: schemaVersion, fields: &fields)
        case "MergedInto": event = try mergedInto(fields: &fields)
        case "SubjectErased": event = .subjectErased(userId: try fields.string(.userId), at: try fields.int(.at))
        case "ChainClaimed":
            event = .chainClaimed(
                userId: try fields.string(.userId), originalTransactionId: try fields.string(.originalTransactionId),
                from: fields.optionalString(.from), at: try fields.int(.at))
        case "ChainReleased":
            event = .chainReleased(
                userId: try fields.string(.userId), originalTransactionId: try fields.string(.originalTransactionId),
                to: try fields.string(.to), at: try fields.int(.at))
        case "BalanceDebited":
            event = .balanceDebited(
                userId: try fields.string(.userId), currency: try fields.string(.currency),
                amount: try fields.int(.amount), idempotencyKey: try fields.string(.idempotencyKey),
                reason: try fields.string(.reason), balanceAfter: try fields.int(.balanceAfter),
                at: try fields.int(.at))
        case "BalanceCredited":
            event = .balanceCredited(
                userId: try fields.string(.userId), currency: try fields.string(.currency),
                amount: try fields.int(.amount), idempotencyKey: try fields.string(.idempotencyKey),
                reason: try fields.string(.reason), at: try fields.int(.at))
        case "EntitlementGranted":
            event = .entitlementGranted(
                userId: try fields.string(.userId), entitlement: try fields.string(.entitlement),
                reason: try fields.string(.reason), expiresAt: fields.optionalInt(.expiresAt), at: try fields.int(.at))
        case "EntitlementRevoked":
            event = .entitlementRevoked(
                userId: try fields.string(.userId), entitlement: try fields.string(.entitlement),
                reason: try fields.string(.reason), at: try fields.int(.at))
        default:
            throw EventDecodingError(type: type, schemaVersion: schemaVersion, message: "unknown event type")
        }
        return event
    }

    /// The full parser, for data the flat reader declines (escapes, fractional numbers).
    private static func slowValues(
        type: String, schemaVersion: Int, data: some Collection<UInt8>
    ) throws(EventDecodingError) -> [EventValue?] {
        let json: JSONValue
        do { json = try JSONValue.parse(data) } catch {
            throw EventDecodingError(type: type, schemaVersion: schemaVersion, message: error.description)
        }
        guard case .object(let members) = json else {
            throw EventDecodingError(type: type, schemaVersion: schemaVersion, message: "data is not an object")
        }
        var values = [EventValue?](repeating: nil, count: EventField.allCases.count)
        for (name, member) in members {
            guard let field = EventField.lookup(name) else { continue }
            switch member {
            case .string(let s): values[field.rawValue] = .string(s)
            case .bool(let b): values[field.rawValue] = .bool(b)
            case .null: values[field.rawValue] = .null
            case .number: values[field.rawValue] = member.int64Value.map(EventValue.int)
            case .array, .object: continue
            }
        }
        return values
    }
}

/// Decodes many stored events in a row (a replay), reusing one field table instead of
/// allocating one per event. Gives exactly what `LedgerEvent.decode` gives. One per thread.
public struct LedgerEventDecoder {
    private var values = [EventValue?](repeating: nil, count: EventField.count)
    private var written: [Int] = []
    /// Each field's last long string (see `FlatObjectReader.read`), kept from event to event.
    private var recent = [String?](repeating: nil, count: EventField.count)

    public init() { written.reserveCapacity(EventField.count) }

    public mutating func decode(
        type: String, schemaVersion: Int, data: UnsafeBufferPointer<UInt8>
    ) throws(EventDecodingError) -> LedgerEvent {
        guard schemaVersion == 1, type != "AliasMerged",
            FlatObjectReader.read(data, into: &values, written: &written, recent: &recent)
        else {
            clear()
            return try LedgerEvent.decode(type: type, schemaVersion: schemaVersion, data: data)
        }
        let result: Result<LedgerEvent, EventDecodingError>
        do {
            var fields = Fields(values: values, type: type, schemaVersion: schemaVersion)
            result = .success(try LedgerEvent.make(type: type, schemaVersion: schemaVersion, fields: &fields))
        } catch {
            result = .failure(error)
        }
        clear()
        return try result.get()
    }

    /// Back to all nil (only the slots the last event set).
    private mutating func clear() {
        for index in written { values[index] = nil }
        written.removeAll(keepingCapacity: true)
    }
}

/// Typed access to a decoded data object, naming the missing field on failure.
struct Fields {
    let values: [EventValue?]
    let type: String
    let schemaVersion: Int

    func string(_ field: EventField) throws(EventDecodingError) -> String {
        guard case .string(let value)? = values[field.rawValue] else { throw missing(field) }
        return value
    }
    func int(_ field: EventField) throws(EventDecodingError) -> Int64 {
        guard case .int(let value)? = values[field.rawValue] else { throw missing(field) }
        return value
    }
    func optionalString(_ field: EventField) -> String? {
        if case .string(let value)? = values[field.rawValue] { return value }
        return nil
    }
    func optionalInt(_ field: EventField) -> Int64? {
        if case .int(let value)? = values[field.rawValue] { return value }
        return nil
    }
    func optionalBool(_ field: EventField) -> Bool? {
        if case .bool(let value)? = values[field.rawValue] { return value }
        return nil
    }

    private func missing(_ field: EventField) -> EventDecodingError {
        EventDecodingError(type: type, schemaVersion: schemaVersion, message: "missing or mistyped \(field.name)")
    }
}

extension JSONWriter {
    mutating func field(_ name: String, _ value: String?) {
        if let value {
            key(name)
            string(value)
        }
    }
    mutating func field(_ name: String, _ value: Int64?) {
        if let value {
            key(name)
            int(value)
        }
    }
    mutating func field(_ name: String, _ value: Bool?) {
        if let value {
            key(name)
            bool(value)
        }
    }
}
