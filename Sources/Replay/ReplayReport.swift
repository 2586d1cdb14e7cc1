import EventStore
import Infrastructure
import JSON

/// What a replay did: the answer of `POST /v1/admin/replay` and the CLI's summary.
public struct ReplayReport: Sendable {
    /// A user whose document differs between the live projection and the rebuilt one.
    public struct ChangedUser: Sendable, Hashable {
        public var userId: String
        /// Top-level document fields that differ (entitlements, balances, subscriptions, …).
        public var fields: [String]
        /// Short summaries (entitlements, balances, subscription statuses); nil when absent.
        public var before: JSONValue?
        public var after: JSONValue?
    }

    public var dryRun: Bool
    public var projections: [String]
    /// Whether the rebuilt tables replaced the live ones.
    public var swapped = false
    /// Events folded in total (bulk read plus catch-up).
    public var events = 0
    /// Of those, events appended while the replay ran (caught up before the comparison/swap).
    public var catchUpEvents = 0
    /// Users with a document in the rebuilt projection.
    public var users = 0
    public var changedUsers: [ChangedUser] = []
    /// Chains whose owner differs between live and rebuilt.
    public var changedChainOwners = 0
    /// Users written to by the service after the replay's last read (dry run only): not judged.
    public var inFlightUsers = 0
    public var durationMs: Int64 = 0
    /// Where the rebuilt projection stands in the log.
    public var position = Checkpoint.start
    /// Time spent per phase (ms).
    public var phases: [(String, Int64)] = []

    public var eventsPerSecond: Double {
        durationMs > 0 ? Double(events) * 1000 / Double(durationMs) : Double(events)
    }

    /// At most this many changed users are listed in full (the count is always exact).
    package static let listLimit = 1000

    /// The changed users as the reports list them: the first `listLimit`, each with its fields
    /// and a short before/after (shared by the replay and the catalog diff).
    package static func write(_ users: [ChangedUser], to w: inout JSONWriter) {
        w.beginArray()
        for user in users.prefix(listLimit) {
            w.beginObject()
            w.key("userId")
            w.string(user.userId)
            w.key("fields")
            w.beginArray()
            for field in user.fields { w.string(field) }
            w.endArray()
            w.key("before")
            w.value(user.before ?? .null)
            w.key("after")
            w.value(user.after ?? .null)
            w.endObject()
        }
        w.endArray()
    }

    public func jsonBytes() -> [UInt8] {
        var w = JSONWriter(capacity: 1024 + min(changedUsers.count, Self.listLimit) * 256)
        w.beginObject()
        w.key("dryRun")
        w.bool(dryRun)
        w.key("projections")
        w.beginArray()
        for name in projections { w.string(name) }
        w.endArray()
        w.key("swapped")
        w.bool(swapped)
        w.key("events")
        w.int(Int64(events))
        w.key("catchUpEvents")
        w.int(Int64(catchUpEvents))
        w.key("users")
        w.int(Int64(users))
        w.key("changedUserCount")
        w.int(Int64(changedUsers.count))
        w.key("changedUsers")
        Self.write(changedUsers, to: &w)
        w.key("changedChainOwners")
        w.int(Int64(changedChainOwners))
        w.key("inFlightUsers")
        w.int(Int64(inFlightUsers))
        w.key("durationMs")
        w.int(durationMs)
        w.key("eventsPerSecond")
        w.int(Int64(eventsPerSecond.rounded()))
        w.key("position")
        w.beginObject()
        w.key("tx")
        w.string(String(position.tx))
        w.key("seq")
        w.int(position.seq)
        w.endObject()
        w.key("phasesMs")
        w.beginObject()
        for (name, ms) in phases {
            w.key(name)
            w.int(ms)
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }

    /// The human summary the CLI prints.
    public var text: String {
        var lines = [
            "\(dryRun ? "dry run: " : "")replayed \(events) events (\(catchUpEvents) caught up) in \(durationMs) ms"
                + " — \(Int(eventsPerSecond.rounded())) events/s; \(users) users",
            "changed users: \(changedUsers.count); changed chain owners: \(changedChainOwners)"
                + (inFlightUsers > 0 ? "; written meanwhile (not judged): \(inFlightUsers)" : ""),
        ]
        for user in changedUsers.prefix(50) {
            let before = user.before.map { String(decoding: $0.serialized(sortedKeys: true), as: UTF8.self) } ?? "—"
            let after = user.after.map { String(decoding: $0.serialized(sortedKeys: true), as: UTF8.self) } ?? "—"
            lines.append(
                "  \(user.userId) [\(user.fields.joined(separator: ","))]\n    before: \(before)\n    after:  \(after)")
        }
        if changedUsers.count > 50 { lines.append("  … and \(changedUsers.count - 50) more") }
        lines.append(
            dryRun ? "nothing was changed (dry run)" : (swapped ? "swapped in the rebuilt projections" : "not swapped"))
        lines.append("phases (ms): " + phases.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    /// A short summary of a document for before/after: entitlements (active, expiresAt),
    /// balances, subscription statuses, non-consumables.
    package static func summary(_ document: [UInt8]) -> JSONValue? {
        guard let json = try? JSONValue.parse(document), let object = json.objectValue else { return nil }
        var out: [String: JSONValue] = [:]
        if let entitlements = object["entitlements"]?.objectValue {
            out["entitlements"] = .object(
                entitlements.mapValues { value in
                    var short: [String: JSONValue] = ["active": value["active"] ?? .null]
                    if let expires = value["expiresAt"], !expires.isNull { short["expiresAt"] = expires }
                    return .object(short)
                })
        }
        if let balances = object["balances"] { out["balances"] = balances }
        if let subscriptions = object["subscriptions"]?.arrayValue {
            var statuses: [String: JSONValue] = [:]
            for subscription in subscriptions {
                if let otid = subscription["originalTransactionId"]?.stringValue {
                    statuses[otid] = subscription["status"] ?? .null
                }
            }
            out["subscriptions"] = .object(statuses)
        }
        if let nonConsumables = object["nonConsumables"]?.arrayValue {
            out["nonConsumables"] = .number(String(nonConsumables.count))
        }
        return .object(out)
    }

    /// Top-level fields whose values differ between two documents.
    package static func differingFields(_ before: [UInt8]?, _ after: [UInt8]?) -> [String] {
        let a = before.flatMap { try? JSONValue.parse($0) }?.objectValue ?? [:]
        let b = after.flatMap { try? JSONValue.parse($0) }?.objectValue ?? [:]
        return Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }.sorted()
    }
}
