import JSON

extension ChangeDetector {
    /// The changes the user's own events name (debits, an admin's credits, grants and revokes).
    /// A balance is the document's after the write, like every other change's: the event's
    /// `balanceAfter` is the answer the debit gave, the same in a write that only debits.
    static func accountEvents(_ events: [LedgerEvent], userId: String, after: ChangeSnapshot, at now: Int64)
        -> [ChangeDraft]
    {
        var changes: [ChangeDraft] = []
        for event in events {
            switch event {
            case .balanceDebited(let user, let currency, let amount, _, let reason, _, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .balanceDebit, occurredAt: now,
                        details: [
                            "currency": .string(currency), "amount": .number(String(amount)),
                            "balance": .number(String(after.customer.balances[currency] ?? 0)),
                            "reason": .string(reason),
                        ]))
            case .balanceCredited(let user, let currency, let amount, _, let reason, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .promotionalGrant, occurredAt: now,
                        details: [
                            "currency": .string(currency), "amount": .number(String(amount)),
                            "balance": .number(String(after.customer.balances[currency] ?? 0)),
                            "reason": .string(reason),
                        ]))
            case .entitlementGranted(let user, let entitlement, let reason, let expiresAt, _) where user == userId:
                var details: [String: JSONValue] = ["reason": .string(reason)]
                details["expiresAt"] = expiresAt.map { .string(RFC3339.format($0)) } ?? .null
                changes.append(
                    ChangeDraft(
                        type: .promotionalGrant, occurredAt: now, entitlementIds: [entitlement], details: details))
            case .entitlementRevoked(let user, let entitlement, let reason, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .promotionalRevoke, occurredAt: now, entitlementIds: [entitlement],
                        details: ["reason": .string(reason)]))
            case .promotionalGranted(let grant) where grant.userId == userId:
                var details: [String: JSONValue] = [
                    "grantId": .string(grant.grantId), "reason": .string(grant.reason),
                    "expiresAt": .string(RFC3339.format(grant.expiresAt)),
                ]
                if let duration = grant.duration { details["duration"] = .string(duration) }
                changes.append(
                    ChangeDraft(
                        type: .promotionalGrant, occurredAt: now, entitlementIds: [grant.entitlement],
                        details: details))
            case .consentRescinded(let user, let appTransactionId, let at) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .consentRescinded, occurredAt: at,
                        details: ["appTransactionId": .string(appTransactionId)]))
            case .promotionalRevoked(let revocation) where revocation.userId == userId:
                changes.append(
                    ChangeDraft(
                        type: .promotionalRevoke, occurredAt: now, entitlementIds: [revocation.entitlement],
                        details: ["grantId": .string(revocation.grantId)]))
            default:
                continue
            }
        }
        return changes
    }

    /// An admin or promotional grant that ran out by itself (its revocation is a PROMOTIONAL_REVOKE).
    static func lapsedGrants(
        _ before: ChangeSnapshot, _ after: ChangeSnapshot, events: [LedgerEvent], userId: String, at now: Int64
    ) -> [ChangeDraft] {
        var revoked: Set<String> = []
        for event in events {
            switch event {
            case .entitlementRevoked(let user, let entitlement, _, _) where user == userId:
                revoked.insert(entitlement)
            case .promotionalRevoked(let revocation) where revocation.userId == userId:
                revoked.insert(revocation.entitlement)
            default:
                continue
            }
        }
        var changes: [ChangeDraft] = []
        for (name, old) in before.customer.entitlements.sorted(by: { $0.key < $1.key })
        where (old.source == .admin || old.source == .promotional) && old.active && !revoked.contains(name) {
            if after.customer.entitlements[name]?.active == true { continue }  // something else grants it now
            changes.append(ChangeDraft(type: .expiration, occurredAt: now, entitlementIds: [name]))
        }
        return changes
    }
}
