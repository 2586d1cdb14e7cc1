import JSON

extension PromotionalGrant {
    /// Writes the fields into an open object (absent optionals omitted).
    public func writeFields(to w: inout JSONWriter) {
        w.field("userId", userId)
        w.field("grantId", grantId)
        w.field("entitlement", entitlement)
        w.field("expiresAt", expiresAt)
        w.field("duration", duration)
        w.field("reason", reason)
        w.field("idempotencyKey", idempotencyKey)
        w.field("at", at)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            userId: try f.string(.userId), grantId: try f.string(.grantId), entitlement: try f.string(.entitlement),
            expiresAt: try f.int(.expiresAt), duration: f.optionalString(.duration), reason: try f.string(.reason),
            idempotencyKey: f.optionalString(.idempotencyKey), at: try f.int(.at))
    }
}

extension PromotionalRevocation {
    /// Writes the fields into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("userId", userId)
        w.field("grantId", grantId)
        w.field("entitlement", entitlement)
        w.field("at", at)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            userId: try f.string(.userId), grantId: try f.string(.grantId), entitlement: try f.string(.entitlement),
            at: try f.int(.at))
    }
}
