import AppStore
import EventStore
import JSON
import Ledger

/// A change as `changes.feed` stores it (ChangeFeedTable writes these).
package struct FeedRow: Sendable {
    /// The owner's subject; the user id itself for a user without a key (legacy); nil for TEST.
    package var userId: String?
    /// The columns other than these three are the draft's, as they always were.
    package var draft: ChangeDraft
    package var details: String
    package var customer: String
}

/// How the change feed keeps no user id or personal data in clear (issue 36, erasure step 3;
/// docs/architecture.md, "Erasure on an append-only log"). For an owner with a key, the row's
/// `user_id` is the owner's subject and `details` and `customer` are each stored as
/// `{"sealed":"<base64>"}` (still a JSON object), AES-256-GCM under the owner's key, bound to the
/// column and the subject. Before sealing, the other users they name become subjects too (a
/// TRANSFER's `from`/`to`, the customer's `sameAppleAccountAs`): erasing one of them makes the
/// reference opaque even while the owner's key lives. An owner without a key (legacy, before
/// 0047) is stored in clear as before; so are rows written before this step.
///
/// Reading opens them again and maps subjects back to ids: what the feed and webhooks serve is
/// byte for byte what they served before. A sealed row whose subject has no identity row any
/// more (an erased person) is not served; a clear row is served only while its user id is known.
package enum ChangeSealing {
    private static let prefix = "{\"sealed\":\""
    private static let suffix = "\"}"

    package static func associatedData(column: String, subject: String) -> [UInt8] {
        Array("changes.feed\n\(column)\n\(subject)".utf8)
    }

    /// Every user id `changes` name: owners, TRANSFER's `from`/`to` (PRODUCT_CHANGE's are
    /// products), the customers' `sameAppleAccountAs`. What `rows` needs subjects for.
    package static func users(named changes: [NewChange]) -> [String] {
        var seen: Set<String> = []
        var users: [String] = []
        for change in changes {
            guard let owner = change.userId else { continue }
            for id in [owner] + transferSides(change.draft.details, type: change.draft.type.rawValue)
                + (CustomerText.sameAppleAccountAs(in: change.customer) ?? [])
            where seen.insert(id).inserted {
                users.append(id)
            }
        }
        return users
    }

    /// The subjects `changes` need: those `known` has with a key (the write's append sealed for
    /// them), the others read on `connection` (one indexed read; none when none is left). In a
    /// write, the subjects written by its append are visible here.
    package static func subjects(
        for changes: [NewChange], knowing known: Subjects = Subjects(), on connection: Connection
    )
        throws(ServiceError) -> Subjects
    {
        let users = users(named: changes).filter { known.byUser[$0]?.key == nil }
        var subjects = known
        guard !users.isEmpty else { return subjects }
        let query = SubjectsTable.existing(users: users)
        subjects.merge(
            SubjectsTable.subjects(
                from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) }))
        return subjects
    }

    /// `changes` as the feed stores them, sealed for owners `subjects` holds with a key. A user
    /// named inside without a subject stays as named (none in practice: every user a change
    /// names has written, so has a row).
    package static func rows(_ changes: [NewChange], subjects: Subjects) throws(ServiceError) -> [FeedRow] {
        var rows: [FeedRow] = []
        rows.reserveCapacity(changes.count)
        for change in changes { rows.append(try row(change, subjects: subjects)) }
        return rows
    }

    package static func row(_ change: NewChange, subjects: Subjects) throws(ServiceError) -> FeedRow {
        guard let owner = change.userId, let subject = subjects.byUser[owner], let key = subject.key else {
            return FeedRow(
                userId: change.userId, draft: change.draft, details: change.detailsJSON, customer: change.customer)
        }
        let rename = { (id: String) -> String in subjects.byUser[id]?.subject ?? id }
        var named = change
        if named.draft.type == .transfer {
            for side in ["from", "to"] {
                if case .string(let id)? = named.draft.details[side] { named.draft.details[side] = .string(rename(id)) }
            }
        }
        let sealed = try seal(
            details: named.detailsJSON, customer: CustomerText.mappingSameAppleAccountAs(change.customer, rename),
            subject: subject.subject, key: key)
        return FeedRow(userId: subject.subject, draft: change.draft, details: sealed.details, customer: sealed.customer)
    }

    /// The `details` and `customer` columns of a row of `subject`, sealed with its key.
    package static func seal(details: String, customer: String, subject: String, key: [UInt8]) throws(ServiceError)
        -> (details: String, customer: String)
    {
        do {
            let sealedDetails = try Sealing.sealText(
                Array(details.utf8), key: key, associatedData: associatedData(column: "details", subject: subject))
            let sealedCustomer = try Sealing.sealText(
                Array(customer.utf8), key: key, associatedData: associatedData(column: "customer", subject: subject))
            return (prefix + sealedDetails + suffix, prefix + sealedCustomer + suffix)
        } catch {
            throw .internalError("sealing a change failed: \(error)")
        }
    }

    /// A sealed row's `details` and `customer` opened with its subject's key; nil when they do
    /// not open (the wrong key, or not authentic).
    package static func opened(details: String, customer: String, subject: String, key: [UInt8])
        -> (details: String, customer: String)?
    {
        guard let sealedDetails = sealedText(details), let sealedCustomer = sealedText(customer),
            let openDetails = try? Sealing.openText(
                sealedDetails, key: key, associatedData: associatedData(column: "details", subject: subject)),
            let openCustomer = try? Sealing.openText(
                sealedCustomer, key: key, associatedData: associatedData(column: "customer", subject: subject))
        else { return nil }
        return (String(decoding: openDetails, as: UTF8.self), String(decoding: openCustomer, as: UTF8.self))
    }

    /// A TRANSFER's `details` naming its sides by `rename` (written as reads write it, keys
    /// sorted); other types' details unchanged.
    package static func renamingTransferSides(_ details: String, type: String, _ rename: (String) -> String) -> String {
        guard type == ChangeType.transfer.rawValue, case .object(var object)? = try? JSONValue.parse(details) else {
            return details
        }
        for side in ["from", "to"] {
            if case .string(let id)? = object[side] { object[side] = .string(rename(id)) }
        }
        var w = JSONWriter(capacity: details.utf8.count + 64)
        w.value(.object(object), sortedKeys: true)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The base64 inside a sealed column; nil for a column in clear.
    package static func sealedText(_ column: String) -> String? {
        guard column.hasPrefix(prefix), column.hasSuffix(suffix),
            column.utf8.count > prefix.utf8.count + suffix.utf8.count
        else { return nil }
        let body = column.dropFirst(prefix.count).dropLast(suffix.count)
        // Base64 has no quote: a clear object that merely starts like this is not mistaken. A
        // byte scan: `contains` with a string went through Foundation's CFStringFind (2 % of a
        // webhook endpoint's service CPU per purchase, every row its dispatcher reads).
        return body.utf8.contains(UInt8(ascii: "\"")) ? nil : String(body)
    }

    /// The ids of a TRANSFER's sides (nothing for other types).
    package static func transferSides(_ details: [String: JSONValue], type: String) -> [String] {
        guard type == ChangeType.transfer.rawValue else { return [] }
        return ["from", "to"].compactMap { details[$0]?.stringValue }
    }
}

/// Rows read from the feed with the owner's identity row, opened and named by user ids.
extension ChangeSealing {
    /// One row of ChangeFeedTable's reads: the change as stored, and what the join found.
    package struct ReadRow {
        package var change: StoredChange
        /// The user id of the row's subject, and its key (nil: no identity row has that subject).
        package var ownerId: String?
        package var key: [UInt8]?
        /// The row names nobody, or its user is still known (by subject, or by id for a clear row).
        package var known: Bool
    }

    /// The rows that may be served, opened, with user ids in place of subjects. `lookup` reads
    /// the identity rows of subjects named inside that the page's own rows did not resolve
    /// (a transfer's other side, a shared Apple Account's other users): one read, when needed.
    package static func open(
        _ rows: [ReadRow], lookup: ([String]) throws(ServiceError) -> Subjects
    ) throws(ServiceError) -> [StoredChange] {
        var opened: [(change: StoredChange, sealed: Bool)] = []
        var users: [String: String] = [:]  // subject → user id
        var inside: Set<String> = []
        for row in rows {
            guard row.known else { continue }
            var change = row.change
            guard sealedText(change.details) != nil, let subject = change.subject else {
                opened.append((change, false))
                continue
            }
            guard let owner = row.ownerId, let key = row.key,
                let open = Self.opened(details: change.details, customer: change.customer, subject: subject, key: key)
            else { continue }  // erased (no key), or not authentic: never served
            users[subject] = owner
            change.userId = owner
            change.details = open.details
            change.customer = open.customer
            if change.type == ChangeType.transfer.rawValue,
                case .object(let object)? = try? JSONValue.parse(change.details)
            {
                inside.formUnion(transferSides(object, type: change.type))
            }
            inside.formUnion(CustomerText.sameAppleAccountAs(in: change.customer) ?? [])
            opened.append((change, true))
        }
        let unknown = inside.subtracting(users.keys)
        if !unknown.isEmpty {
            for (subject, found) in try lookup(unknown.sorted()).bySubject { users[subject] = found.userId }
        }
        // A subject nobody resolves any more (an erased other user) stays as the opaque subject.
        let rename = { (subject: String) -> String in users[subject] ?? subject }
        return opened.map { entry in
            guard entry.sealed else { return entry.change }
            var change = entry.change
            change.details = renamingTransferSides(change.details, type: change.type, rename)
            change.customer = CustomerText.mappingSameAppleAccountAs(change.customer, rename)
            return change
        }
    }
}
