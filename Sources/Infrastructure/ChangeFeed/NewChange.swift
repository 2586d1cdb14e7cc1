import EventStore
import JSON
import Ledger

/// A change about to be written: a detector's draft for one user, with the document after it.
package struct NewChange: Sendable {
    package var userId: String?
    package var draft: ChangeDraft
    /// The Customer document after the change (JSON).
    package var customer: String

    package init(userId: String?, draft: ChangeDraft, customer: String) {
        self.userId = userId
        self.draft = draft
        self.customer = customer
    }

    /// Every change of `steps`, each with its step's document (the last step's document is the
    /// one `rendered` holds when given: the bytes the write stores, rendered once).
    package static func from(_ steps: [ChangeStep], userId: String, rendered: [UInt8]? = nil) -> [NewChange] {
        var changes: [NewChange] = []
        for (index, step) in steps.enumerated() {
            let document =
                index == steps.count - 1 && rendered != nil
                ? String(decoding: rendered!, as: UTF8.self)
                : String(decoding: step.customer.jsonBytes(), as: UTF8.self)
            for draft in step.changes { changes.append(NewChange(userId: userId, draft: draft, customer: document)) }
        }
        return changes
    }

    /// `details` as the feed stores it: a JSON object with sorted keys.
    package var detailsJSON: String {
        var w = JSONWriter(capacity: 64)
        w.value(.object(draft.details), sortedKeys: true)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

extension NewChange {
    /// A CORRECTION for `userId`: the user's document changed with no new fact (a replay, a new
    /// catalog). `details` carry the entitlements and balances of `before` (what the feed had
    /// announced: the stored document) and of `after`, which is also the change's `customer`.
    package static func correction(userId: String, before: [UInt8]?, after: [UInt8], at instant: Int64) -> NewChange {
        func summary(_ document: [UInt8]?) -> JSONValue {
            let parsed = document.flatMap { try? JSONValue.parse($0) }
            return .object([
                "entitlements": parsed?["entitlements"] ?? .object([:]),
                "balances": parsed?["balances"] ?? .object([:]),
            ])
        }
        let draft = ChangeDraft(
            type: .correction, occurredAt: instant, details: ["before": summary(before), "after": summary(after)])
        return NewChange(userId: userId, draft: draft, customer: String(decoding: after, as: UTF8.self))
    }

    /// `changes` as insert statements of at most 500 changes each (bound arrays stay small),
    /// sealed with `subjects` (ChangeSealing).
    package static func inserts(_ changes: [NewChange], subjects: Subjects, recordedAt: Int64) throws(ServiceError)
        -> [Query]
    {
        let rows = try ChangeSealing.rows(changes, subjects: subjects)
        return stride(from: 0, to: rows.count, by: 500).compactMap { start in
            ChangeFeedTable.insert(Array(rows[start..<min(rows.count, start + 500)]), recordedAt: recordedAt)
        }
    }

    /// `inserts`, the subjects read on `connection` first (one indexed read).
    package static func inserts(_ changes: [NewChange], recordedAt: Int64, on connection: Connection)
        throws(ServiceError)
        -> [Query]
    {
        try inserts(changes, subjects: ChangeSealing.subjects(for: changes, on: connection), recordedAt: recordedAt)
    }
}
