import EventStore
import Foundation
import Glibc
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §4: "an acknowledged write's changes are never lost" and "deliveries survive restarts
/// and kill -9", with the real binary: `kill -9` while 8 clients post purchases, start again.
@Suite(.serialized, .tags(.database)) struct ChangeDurabilityTests {
    @Test func everyAcknowledgedPurchaseIsInTheFeedOnceAndReachesTheReceiverAfterKill9() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let receiver = try WebhookReceiver(threads: 8)
        defer { receiver.stop() }
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: root + "/testCA.der"))
        let file = root + "/config.json"
        try #"""
        {"apps": [{"bundleId": "\#(TestVectors.bundleId)", "appAppleId": \#(TestVectors.appAppleId),
                   "environments": ["Sandbox", "Production"],
                   "products": {"\#(TestService.monthly)": {"type": "subscription", "entitlements": ["pro"]}}}],
         "trustedRoots": ["testCA.der"],
         "webhooks": [{"name": "backend", "url": "\#(receiver.url())", "secret": "\#(WebhookTests.secret)",
                       "timeoutSeconds": 5, "retrySchedule": [0.5, 1, 1, 1, 1]}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = ["DATABASE_URL": conninfo]
        // One committer: any two purchases recorded at the same moment share a batch, also in a
        // debug build where verifying takes longer than recording.
        let first = try OpsServe(
            ["--port", "0", "--config", file],
            environment: environment.merging(["IAP_LEDGER_INGEST_COMMITTERS": "1"]) { $1 })
        let key = try APIKeys().create(name: "durability", scopes: ["read", "write"], on: Connection(conninfo))

        // 8 clients post distinct purchases until the service dies under them.
        let now = TestVectors.nowMillis
        let acknowledged = Mutex<Set<String>>([])
        let posted = Atomic<Int>(0)
        let clients = DispatchGroup()
        let port = first.port
        for client in 0..<8 {
            clients.enter()
            Thread.detachNewThread {
                defer { clients.leave() }
                guard let api = try? Optional(ServiceHTTPClient(port: port, apiKey: key)) else { return }
                for index in 0..<10_000 {
                    let id = String(4_000_000 + client * 10_000 + index)
                    let fields = Mint.transaction(
                        id, product: TestService.monthly, purchase: now - hour, expires: now + 29 * day,
                        signed: now - hour)
                    guard let response = try? api.purchase("u-\(id)", Mint.signed(fields)) else { return }
                    posted.add(1, ordering: .relaxed)
                    if response.status == 200 { acknowledged.withLock { _ = $0.insert(id) } }
                }
            }
        }
        try eventually("posted.load(ordering: .relaxed) >= 200", within: 60) { posted.load(ordering: .relaxed) >= 200 }
        // On the batched path: group commit put several of them in one transaction.
        try eventually(
            "a group-commit batch of more than one",
            within: 30
        ) {
            let metrics = (try? ServiceHTTPClient(port: port).get("/metrics").text) ?? ""
            return GroupCommitTests.batchesOfMoreThanOne(metrics) > 0
        }
        #expect(first.stop(SIGKILL) == 128 + SIGKILL)
        #expect(clients.wait(timeout: .now() + 60) == .success)
        let ids = acknowledged.withLock { $0 }
        #expect(ids.count >= 150, "\(ids.count) purchases acknowledged before the kill")

        let second = try OpsServe(["--port", "0", "--config", file], environment: environment)
        defer { _ = second.stop() }
        let connection = try Connection(conninfo)
        let rows = try connection.query(
            "SELECT transaction_id, count(*) FROM changes.feed WHERE type = 'INITIAL_PURCHASE' GROUP BY transaction_id")
        var inFeed: [String: Int] = [:]
        for row in 0..<rows.count { inFeed[rows[row, 0] ?? ""] = Int(rows[row, 1] ?? "0") }
        let missing = ids.filter { inFeed[$0] == nil }
        #expect(missing.isEmpty, "acknowledged but not in the feed: \(missing.sorted().prefix(5))")
        #expect(inFeed.values.allSatisfy { $0 == 1 }, "a purchase's change written twice")

        // Every one of them reaches the receiver (at least once; it dedupes on webhook-id).
        func received() -> Set<String> {
            Set(
                receiver.requests.filter(\.signatureValid).compactMap {
                    (try? JSONValue.parse($0.body))?["transactionId"]?.stringValue
                })
        }
        try eventually(
            "\(ids.subtracting(received()).count) acknowledged purchases never reached the receiver: "
                + Self.deliveries(of: ids.subtracting(received()), on: connection) + "\n" + second.stderr.suffix(1500),
            within: 120
        ) { ids.isSubset(of: received()) }
    }

    /// Where each missing purchase stands: its feed row, its delivery (none: never created) and
    /// the endpoint's cursor, so a failure says which step lost it.
    static func deliveries(of missing: Set<String>, on connection: Connection) -> String {
        let rows = try? connection.query(
            """
            SELECT f.transaction_id, f.seq, f.tx::text, f.user_id, d.status, d.attempts, d.last_status, d.last_error,
                d.tx::text, (SELECT s.key IS NOT NULL FROM identity.subjects s WHERE s.subject = f.user_id),
                (SELECT c.tx::text || '/' || c.seq FROM webhooks.cursors c WHERE c.endpoint = 'backend')
            FROM changes.feed f LEFT JOIN webhooks.deliveries d ON d.endpoint = 'backend' AND d.seq = f.seq
            WHERE f.transaction_id = ANY($1::text[]) ORDER BY f.seq LIMIT 10
            """, [PostgresArray.literal(missing.sorted())])
        guard let rows else { return "(the deliveries could not be read)" }
        return (0..<rows.count).map { row in
            "transaction \(rows[row, 0] ?? "-"): feed seq \(rows[row, 1] ?? "-") tx \(rows[row, 2] ?? "-") user "
                + "\(rows[row, 3] ?? "-") keyed \(rows[row, 9] ?? "-"); delivery \(rows[row, 4] ?? "none") attempts "
                + "\(rows[row, 5] ?? "-") last \(rows[row, 6] ?? "-") \(rows[row, 7] ?? "-") tx \(rows[row, 8] ?? "-"); "
                + "cursor \(rows[row, 10] ?? "-")"
        }.joined(separator: "\n")
    }
}
