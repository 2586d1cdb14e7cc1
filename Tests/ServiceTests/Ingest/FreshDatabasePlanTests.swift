import EventStore
import TestSupport
import Testing

@testable import Changes
@testable import Infrastructure

/// The statements every purchase and every webhook delivery runs probe the tables that grow with
/// users and changes by index, whatever plan the plan cache keeps for them, even one made on a
/// fresh database. In session mode every statement is prepared, and after five runs PostgreSQL
/// may keep a generic plan. On a database no ANALYZE has seen yet (a new deployment, the first
/// minute of a benchmark) the planner takes each table for ten pages, so hashing the whole table
/// looks cheaper than a few index probes; that plan then stays until autovacuum analyzes the
/// table, and every call reads the whole table meanwhile. In the webhooks benchmark the read of
/// a batch's streams took 1.7 ms instead of 0.3 ms when it happened, and CPU per purchase swung
/// from 1.10× to 1.35× between runs of the same binary.
@Suite(.tags(.database)) struct FreshDatabasePlanTests {
    /// Tables a purchase or a delivery reads, each growing with users, changes or deliveries.
    static let growing = [
        "subjects", "tokens", "events", "streams", "feed", "deliveries", "attempts", "chain_owners", "users",
        "apple_accounts", "user_aliases",
    ]

    /// The scans that read a growing table whole: a sequential scan, or an index walked with no
    /// condition on it (only a filter).
    static func wholeReads(_ plan: String) -> [String] {
        let lines = plan.split(separator: "\n").map(String.init)
        return lines.indices.filter { index in
            let line = lines[index]
            guard let table = growing.first(where: { line.contains(" on \($0) ") || line.hasSuffix(" on \($0)") })
            else { return false }
            if line.contains("Seq Scan on \(table)") { return true }
            guard line.contains("Index Scan") || line.contains("Index Only Scan") else { return false }
            // The node's own properties follow it, until the next node ("->  ", not JSON's "->>").
            let properties = lines[(index + 1)...].prefix { !$0.contains("->  ") }
            return !properties.contains { $0.contains("Index Cond:") }
        }.map { lines[$0] }
    }

    static func statements() -> [(name: String, statement: Connection.Statement)] {
        let subject = Subject.minted(for: "u1")
        let token = TokenSubject.minted(for: "6f6c0c3e-3a39-4c5b-8d4e-0a6f3b1f2c11")
        let change = StoredChange(
            seq: 7, tx: 900, type: "purchase", userId: "u1", subject: subject.subject, environment: "Sandbox",
            occurredAt: 1, recordedAt: 1, productId: "p", originalTransactionId: "1", transactionId: "1",
            entitlementIds: [], details: "{}", customer: "{}")
        let update = WebhookPlanner.Update(
            seq: 7, status: .delivered, failures: 0, nextAttemptAt: 1, attemptedAt: 1, httpStatus: 204, error: nil,
            durationMs: 3)
        var list: [(String, Connection.Statement)] = [
            ("save subjects", SubjectsTable.save([subject], tokens: [token]).statement),
            ("subjects of users", SubjectsTable.existing(users: ["u1"]).statement),
            ("feed page", ChangeFeedTable.page(after: .start, limit: 1000, userId: nil).statement),
            ("feed page of a user", ChangeFeedTable.page(after: .start, limit: 100, userId: "u1").statement),
            ("feed changes by seq", ChangeFeedTable.changes(seqs: [7, 8]).statement),
            ("open deliveries", WebhookDeliveriesTable.open(endpoint: "e", after: .start, limit: 512).statement),
            ("document cache check", UserDocumentsTable.changes(since: 900).statement),
            ("cached document", UserDocumentsTable.cached(userId: "u1", now: 1).statement),
            ("documents of users", UserDocumentsTable.rows(of: ["u1", "u2"]).statement),
            ("rendered at", UserDocumentsTable.renderedAt(of: ["u1", "u2"]).statement),
            ("documents due", UserDocumentsTable.due(now: 1, limit: 100).statement),
            ("chain owners", ChainOwnersTable.ownerRows(of: ["1", "2"]).statement),
        ]
        if let load = LedgerRepository(store: EventStore()).loadStatement(streams: ["user:u1", "chain:1"]) {
            list.append(("read streams", load))
        }
        if let create = WebhookDeliveriesTable.create(endpoint: "e", changes: [change], now: 1) {
            list.append(("create deliveries", create.statement))
        }
        var failed = update
        (failed.seq, failed.status, failed.httpStatus, failed.failures) = (8, .failed, 503, 1)
        for (index, query) in WebhookDeliveriesTable.record(endpoint: "e", [update, failed], now: 1).enumerated() {
            list.append(("record attempts \(index)", query.statement))
        }
        list.append(("webhook gauges", WebhookDeliveriesTable.openSummary.statement))
        list.append(("skip erased", WebhookDeliveriesTable.skip(endpoint: "e", seqs: [7], now: 1).statement))
        return list
    }

    @Test func hotStatementsProbeGrowingTablesByIndexOnAFreshDatabase() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        for (index, (name, statement)) in Self.statements().enumerated() {
            let plan = try connection.genericPlan(of: statement, named: "probe\(index)")
            #expect(Self.wholeReads(plan).isEmpty, "\(name) reads a growing table whole:\n\(plan)")
            if (name.hasPrefix("record attempts") && plan.hasPrefix("Update")) || name == "skip erased" {
                #expect(plan.contains("deliveries_pkey"), "finds its deliveries by seq:\n\(plan)")
            }
        }
    }
}
