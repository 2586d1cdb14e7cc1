import JSON

extension LedgerEvent {
    /// The fields of the two events of an alias merge (api.md §7), into an open object.
    func writeMergeFields(to w: inout JSONWriter) {
        switch self {
        case .aliasMerged(let userId, let alias, let moved, let at):
            w.field("userId", userId)
            w.field("alias", alias)
            w.key("moved")
            moved.writeSnapshot(to: &w)
            w.field("at", at)
        case .mergedInto(let userId, let target, let at):
            w.field("userId", userId)
            w.field("target", target)
            w.field("at", at)
        default:
            preconditionFailure("not an alias merge event")
        }
    }

    static func mergedInto(fields: inout Fields) throws(EventDecodingError) -> LedgerEvent {
        .mergedInto(userId: try fields.string(.userId), target: try fields.string(.target), at: try fields.int(.at))
    }

    /// An AliasMerged event's data, through the full parser (it holds arrays and an object).
    static func aliasMerged(schemaVersion: Int, data: some Collection<UInt8>) throws(EventDecodingError)
        -> LedgerEvent
    {
        func failure(_ message: String) -> EventDecodingError {
            EventDecodingError(type: "AliasMerged", schemaVersion: schemaVersion, message: message)
        }
        let json: JSONValue
        do { json = try JSONValue.parse(data) } catch { throw failure(error.description) }
        guard let userId = json["userId"]?.stringValue, let alias = json["alias"]?.stringValue,
            let at = json["at"]?.int64Value, let moved = json["moved"]
        else { throw failure("missing or mistyped userId, alias, at or moved") }
        do {
            return .aliasMerged(userId: userId, alias: alias, moved: try Account(snapshot: moved), at: at)
        } catch {
            throw failure("missing or mistyped moved.\(error.field)")
        }
    }
}
