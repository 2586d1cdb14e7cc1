import JSON

/// The stored form of the identity events of api.md §7 and §8 (a user's appAccountTokens, the
/// Apple Accounts they share, a withdrawn consent): flat objects under the names the API uses.
extension LedgerEvent {
    func writeIdentityFields(to w: inout JSONWriter) {
        switch self {
        case .appAccountTokenRegistered(let userId, let token, let minted, let at):
            w.field("userId", userId)
            w.field("appAccountToken", token)
            w.key("minted")
            w.bool(minted)
            w.field("at", at)
        case .consentRescinded(let userId, let appTransactionId, let at):
            w.field("userId", userId)
            w.field("appTransactionId", appTransactionId)
            w.field("at", at)
        case .appleAccountShared(let userId, let appTransactionId, let sharedWith, let at):
            w.field("userId", userId)
            w.field("appTransactionId", appTransactionId)
            w.field("sharedWith", sharedWith)
            w.field("at", at)
        default:
            preconditionFailure("not an identity event")
        }
    }

    static func identityEvent(type: String, schemaVersion: Int, fields: inout Fields) throws(EventDecodingError)
        -> LedgerEvent
    {
        switch type {
        case "AppAccountTokenRegistered":
            guard let minted = fields.optionalBool(.minted) else {
                throw EventDecodingError(
                    type: type, schemaVersion: schemaVersion, message: "missing or mistyped minted")
            }
            return .appAccountTokenRegistered(
                userId: try fields.string(.userId), appAccountToken: try fields.string(.appAccountToken),
                minted: minted, at: try fields.int(.at))
        case "ConsentRescinded":
            return .consentRescinded(
                userId: try fields.string(.userId), appTransactionId: try fields.string(.appTransactionId),
                at: try fields.int(.at))
        default:
            return .appleAccountShared(
                userId: try fields.string(.userId), appTransactionId: try fields.string(.appTransactionId),
                sharedWith: try fields.string(.sharedWith), at: try fields.int(.at))
        }
    }
}
