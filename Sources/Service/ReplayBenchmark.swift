import EventStore
import Foundation
import Ledger

/// For `make bench`: fills a database's log with generated, valid ledger events (straight
/// COPY into `es.events`, no HTTP, no signatures) and times a replay against a plain COPY of
/// the whole log.
public enum ReplayBenchmark {
    public struct Result: Sendable, CustomStringConvertible {
        public var events: Int
        public var users: Int
        public var replaySeconds: Double
        public var copySeconds: Double
        /// CPU time (user + system) of this process during the replay: steadier than wall time
        /// on a shared machine.
        public var replayCPUSeconds: Double = 0
        public var eventsPerSecond: Double { replaySeconds > 0 ? Double(events) / replaySeconds : 0 }
        public var ratioToCopy: Double { copySeconds > 0 ? replaySeconds / copySeconds : 0 }
        public var phases: [(String, Int64)]

        public var description: String {
            String(format: "replay of %d events / %d users: %.2f s (%.0f events/s, %.2f s CPU); COPY (SELECT * FROM es.events) TO STDOUT: %.2f s; ratio %.2f×",
                   events, users, replaySeconds, eventsPerSecond, replayCPUSeconds, copySeconds, ratioToCopy)
                + "; phases ms: " + phases.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        }
    }

    /// The catalog the generated events are judged with.
    public static let catalog = Catalog(products: [
        "bench.monthly": Product(type: .subscription, entitlements: ["pro"]),
        "bench.coins": Product(type: .consumable, grants: ["coins": 100]),
    ])

    /// Appends about `events` events for `users` users: per user a subscription chain (claim,
    /// first period, renewal info, renewals), a consumable chain (claim, purchase) and debits.
    /// Runs as the admin connection (COPY straight into the log); stream heads are set after.
    public static func seed(events: Int, users: Int, conninfo: String) throws {
        let connection = try Connection(conninfo)
        let start: Int64 = 1_767_225_600_000  // 2026-01-01
        let day: Int64 = 86_400_000
        var buffer: [UInt8] = []
        buffer.reserveCapacity(20 << 20)
        var written = 0
        func flush() throws {
            guard !buffer.isEmpty else { return }
            try connection.copyIn(
                "COPY es.events (stream_id, version, type, schema_version, data) FROM STDIN", data: buffer)
            buffer.removeAll(keepingCapacity: true)
        }
        for user in 0..<users {
            let count = events / users + (user < events % users ? 1 : 0)
            let userId = "bench-\(user)"
            let sub = String(3_000_000_000 + Int64(user) * 2)
            let coins = String(3_000_000_001 + Int64(user) * 2)
            var versions: [String: Int64] = [:]
            var generated: [LedgerEvent] = []
            let purchased = start + Int64(user % 300) * 3_600_000
            func transaction(_ id: String, _ otid: String, product: String, type: String, at: Int64, expires: Int64?) -> LedgerEvent {
                .transactionRecorded(Transaction(
                    transactionId: id, originalTransactionId: otid, productId: product, bundleId: "com.example.bench",
                    type: type, purchaseDate: at, originalPurchaseDate: purchased, expiresDate: expires, signedDate: at,
                    environment: "Production", webOrderLineItemId: id, transactionReason: at == purchased ? "PURCHASE" : "RENEWAL",
                    price: 9990, currency: user % 3 == 0 ? "EUR" : "USD", storefront: "USA"))
            }
            let base: [LedgerEvent] = [
                .chainClaimed(userId: userId, originalTransactionId: sub, from: nil, at: purchased),
                transaction(sub, sub, product: "bench.monthly", type: "Auto-Renewable Subscription", at: purchased,
                            expires: purchased + 30 * day),
                .renewalInfoRecorded(RenewalInfo(
                    originalTransactionId: sub, productId: "bench.monthly", autoRenewProductId: "bench.monthly",
                    autoRenewStatus: 1, isInBillingRetryPeriod: false, signedDate: purchased, environment: "Production")),
                .chainClaimed(userId: userId, originalTransactionId: coins, from: nil, at: purchased),
                transaction(coins, coins, product: "bench.coins", type: "Consumable", at: purchased, expires: nil),
            ]
            generated.append(contentsOf: base.prefix(count))
            var period: Int64 = 1
            while generated.count < count {
                if generated.count % 2 == 1 {
                    let at = purchased + period * 30 * day
                    generated.append(transaction(
                        "\(sub)\(period)", sub, product: "bench.monthly", type: "Auto-Renewable Subscription", at: at,
                        expires: at + 30 * day))
                    period += 1
                } else {
                    generated.append(.balanceDebited(
                        userId: userId, currency: "coins", amount: 1, idempotencyKey: "d-\(generated.count)",
                        reason: "bench", balanceAfter: 0, at: purchased + Int64(generated.count) * 1000))
                }
            }
            for event in generated {
                let stream = event.stream
                let version = (versions[stream] ?? 0) + 1
                versions[stream] = version
                CopyText.escape(stream, into: &buffer)
                buffer.append(0x09)
                buffer.append(contentsOf: String(version).utf8)
                buffer.append(0x09)
                buffer.append(contentsOf: event.typeName.utf8)
                buffer.append(contentsOf: "\t1\t".utf8)
                CopyText.escape(bytes: event.encode(), into: &buffer)
                buffer.append(0x0A)
                written += 1
            }
            if buffer.count >= 16 << 20 { try flush() }
        }
        try flush()
        try connection.executeScript(
            """
            INSERT INTO es.streams (stream_id, version)
            SELECT stream_id, max(version) FROM es.events GROUP BY stream_id
            ON CONFLICT (stream_id) DO UPDATE SET version = excluded.version;
            ANALYZE es.events;
            """)
    }

    /// Runs one replay (swapping in unless `dryRun`) with the benchmark catalog; answers its report.
    public static func replay(conninfo: String, dryRun: Bool = false) throws -> ReplayReport {
        try ReplayEngine(conninfo: conninfo, catalog: catalog).run(ReplayOptions(dryRun: dryRun))
    }

    /// Times a replay and, on the same database in the same go, `COPY (SELECT * FROM es.events)
    /// TO STDOUT`. The replay first runs once untimed when `proj.users` is empty, so the timed one
    /// compares against a live projection as in production.
    public static func measure(conninfo: String) throws -> Result {
        let connection = try Connection(conninfo)
        let users = Int(try connection.query("SELECT count(*) AS n FROM proj.users").int64(0, "n") ?? 0)
        if users == 0 { _ = try replay(conninfo: conninfo) }
        let copyStart = Date()
        let copied = try connection.copyOut("COPY (SELECT * FROM es.events) TO STDOUT")
        let copySeconds = Date().timeIntervalSince(copyStart)
        _ = copied.count
        let cpuStart = processCPUSeconds()
        let replayStart = Date()
        let report = try replay(conninfo: conninfo)
        let replaySeconds = Date().timeIntervalSince(replayStart)
        return Result(
            events: report.events, users: report.users, replaySeconds: replaySeconds, copySeconds: copySeconds,
            replayCPUSeconds: processCPUSeconds() - cpuStart, phases: report.phases)
    }

    static func processCPUSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
