import JSON

/// An account as the `moved` object of an AliasMerged event: everything the alias had, in
/// lists sorted by key so the same account always encodes to the same bytes.
extension Account {
    public func writeSnapshot(to w: inout JSONWriter) {
        w.beginObject()
        w.key("chains")
        w.beginArray()
        for otid in chains.sorted() { w.string(otid) }
        w.endArray()
        w.key("debits")
        w.beginArray()
        for (key, debit) in debits.sorted(by: { Self.order($0.key, $1.key) }) {
            w.beginObject()
            w.field("currency", key.currency)
            w.field("idempotencyKey", key.idempotencyKey)
            w.field("amount", debit.amount)
            w.field("reason", debit.reason)
            w.field("balanceAfter", debit.balanceAfter)
            w.field("at", debit.at)
            w.endObject()
        }
        w.endArray()
        w.key("credits")
        w.beginArray()
        for (key, credit) in credits.sorted(by: { Self.order($0.key, $1.key) }) {
            w.beginObject()
            w.field("currency", key.currency)
            w.field("idempotencyKey", key.idempotencyKey)
            w.field("amount", credit.amount)
            w.field("reason", credit.reason)
            w.field("at", credit.at)
            w.endObject()
        }
        w.endArray()
        w.key("grants")
        w.beginArray()
        for (entitlement, grant) in grants.sorted(by: { $0.key < $1.key }) {
            w.beginObject()
            w.field("entitlement", entitlement)
            w.field("reason", grant.reason)
            w.field("expiresAt", grant.expiresAt)
            w.field("at", grant.at)
            w.endObject()
        }
        w.endArray()
        w.key("promotions")
        w.beginArray()
        for (_, promotion) in promotions.sorted(by: { $0.key < $1.key }) {
            w.beginObject()
            promotion.grant.writeFields(to: &w)
            w.field("revokedAt", promotion.revokedAt)
            w.endObject()
        }
        w.endArray()
        w.key("appAccountTokens")
        w.beginArray()
        for token in appAccountTokens { w.string(token) }
        w.endArray()
        w.field("mintedAppAccountToken", mintedAppAccountToken)
        // What Apple said of the alias's Apple Accounts (api.md §7, §8): only when there is any.
        if !consentRescinded.isEmpty {
            w.key("consentRescinded")
            w.beginArray()
            for (appTransactionId, at) in consentRescinded.sorted(by: { $0.key < $1.key }) {
                w.beginObject()
                w.field("appTransactionId", appTransactionId)
                w.field("at", at)
                w.endObject()
            }
            w.endArray()
        }
        if !appleAccounts.isEmpty {
            w.key("appleAccounts")
            w.beginArray()
            for (appTransactionId, users) in appleAccounts.sorted(by: { $0.key < $1.key }) {
                w.beginObject()
                w.field("appTransactionId", appTransactionId)
                w.key("sharedWith")
                w.beginArray()
                for user in users.sorted() { w.string(user) }
                w.endArray()
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
    }

    private static func order(_ a: BalanceKey, _ b: BalanceKey) -> Bool {
        (a.currency, a.idempotencyKey) < (b.currency, b.idempotencyKey)
    }

    /// Reads a `moved` object back (sums of debits and credits are recomputed: an alias has no
    /// aliases of its own, so its sums are the sums of its entries).
    init(snapshot: JSONValue) throws(SnapshotError) {
        self = .initial
        for otid in try Self.items(snapshot, "chains") { chains.insert(try Self.text(otid, "chain")) }
        for item in try Self.items(snapshot, "debits") {
            let currency = try Self.text(item["currency"], "currency")
            let amount = try Self.number(item["amount"], "amount")
            debits[
                BalanceKey(currency: currency, idempotencyKey: try Self.text(item["idempotencyKey"], "idempotencyKey"))] =
                Debit(
                    amount: amount, reason: try Self.text(item["reason"], "reason"),
                    balanceAfter: try Self.number(item["balanceAfter"], "balanceAfter"),
                    at: try Self.number(item["at"], "at"))
            debited[currency, default: 0] += amount
        }
        for item in try Self.items(snapshot, "credits") {
            let currency = try Self.text(item["currency"], "currency")
            let amount = try Self.number(item["amount"], "amount")
            credits[
                BalanceKey(currency: currency, idempotencyKey: try Self.text(item["idempotencyKey"], "idempotencyKey"))] =
                Credit(
                    amount: amount, reason: try Self.text(item["reason"], "reason"),
                    at: try Self.number(item["at"], "at"))
            credited[currency, default: 0] += amount
        }
        for item in try Self.items(snapshot, "grants") {
            grants[try Self.text(item["entitlement"], "entitlement")] = AdminGrant(
                reason: try Self.text(item["reason"], "reason"), expiresAt: item["expiresAt"]?.int64Value,
                at: try Self.number(item["at"], "at"))
        }
        for item in try Self.items(snapshot, "promotions") {
            let grant = PromotionalGrant(
                userId: try Self.text(item["userId"], "userId"), grantId: try Self.text(item["grantId"], "grantId"),
                entitlement: try Self.text(item["entitlement"], "entitlement"),
                expiresAt: try Self.number(item["expiresAt"], "expiresAt"), duration: item["duration"]?.stringValue,
                reason: try Self.text(item["reason"], "reason"), idempotencyKey: item["idempotencyKey"]?.stringValue,
                at: try Self.number(item["at"], "at"))
            promotions[grant.grantId] = PromotionalGrantState(grant: grant, revokedAt: item["revokedAt"]?.int64Value)
        }
        for token in try Self.items(snapshot, "appAccountTokens") {
            appAccountTokens.append(try Self.text(token, "token"))
        }
        mintedAppAccountToken = snapshot["mintedAppAccountToken"]?.stringValue
        for item in snapshot["consentRescinded"]?.arrayValue ?? [] {
            consentRescinded[try Self.text(item["appTransactionId"], "appTransactionId")] = try Self.number(
                item["at"], "at")
        }
        for item in snapshot["appleAccounts"]?.arrayValue ?? [] {
            let users = try Self.items(item, "sharedWith").map { user throws(SnapshotError) in
                try Self.text(user, "user")
            }
            appleAccounts[try Self.text(item["appTransactionId"], "appTransactionId")] = Set(users)
        }
    }

    /// What is wrong with a `moved` object.
    public struct SnapshotError: Error { public var field: String }

    private static func items(_ object: JSONValue, _ name: String) throws(SnapshotError) -> [JSONValue] {
        guard let items = object[name]?.arrayValue else { throw SnapshotError(field: name) }
        return items
    }
    private static func text(_ value: JSONValue?, _ name: String) throws(SnapshotError) -> String {
        guard let text = value?.stringValue else { throw SnapshotError(field: name) }
        return text
    }
    private static func number(_ value: JSONValue?, _ name: String) throws(SnapshotError) -> Int64 {
        guard let number = value?.int64Value else { throw SnapshotError(field: name) }
        return number
    }
}
