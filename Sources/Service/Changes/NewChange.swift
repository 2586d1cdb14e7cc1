import JSON
import Ledger

/// A change about to be written: a detector's draft for one user, with the document after it.
struct NewChange: Sendable {
    var userId: String?
    var draft: ChangeDraft
    /// The Customer document after the change (JSON).
    var customer: String

    /// Every change of `steps`, each with its step's document (the last step's document is the
    /// one `rendered` holds when given: the bytes the write stores, rendered once).
    static func from(_ steps: [ChangeStep], userId: String, rendered: [UInt8]? = nil) -> [NewChange] {
        var changes: [NewChange] = []
        for (index, step) in steps.enumerated() {
            let document =
                index == steps.count - 1 && rendered != nil
                ? String(decoding: rendered!, as: UTF8.self) : String(decoding: step.customer.jsonBytes(), as: UTF8.self)
            for draft in step.changes { changes.append(NewChange(userId: userId, draft: draft, customer: document)) }
        }
        return changes
    }

    /// `details` as the feed stores it: a JSON object with sorted keys.
    var detailsJSON: String {
        var w = JSONWriter(capacity: 64)
        w.value(.object(draft.details), sortedKeys: true)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
