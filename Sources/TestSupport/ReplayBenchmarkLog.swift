import EventStore
import Ledger

/// A generated, valid ledger log for timing and testing the replay: straight COPY into
/// `es.events`, no HTTP, no signatures. Shared by the bench tool (`ReplayBenchmark`) and
/// `ReplayBenchmarkTests`, which checks that such a log replays into consistent documents.
public enum ReplayBenchmarkLog {
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
            func transaction(_ id: String, _ otid: String, product: String, type: String, at: Int64, expires: Int64?)
                -> LedgerEvent
            {
                .transactionRecorded(
                    Transaction(
                        transactionId: id, originalTransactionId: otid, productId: product,
                        bundleId: "com.example.bench",
                        type: type, purchaseDate: at, originalPurchaseDate: purchased, expiresDate: expires,
                        signedDate: at,
                        environment: "Production", webOrderLineItemId: id,
                        transactionReason: at == purchased ? "PURCHASE" : "RENEWAL",
                        price: 9990, currency: user % 3 == 0 ? "EUR" : "USD", storefront: "USA"))
            }
            let base: [LedgerEvent] = [
                .chainClaimed(userId: userId, originalTransactionId: sub, from: nil, at: purchased),
                transaction(
                    sub, sub, product: "bench.monthly", type: "Auto-Renewable Subscription", at: purchased,
                    expires: purchased + 30 * day),
                .renewalInfoRecorded(
                    RenewalInfo(
                        originalTransactionId: sub, productId: "bench.monthly", autoRenewProductId: "bench.monthly",
                        autoRenewStatus: 1, isInBillingRetryPeriod: false, signedDate: purchased,
                        environment: "Production")),
                .chainClaimed(userId: userId, originalTransactionId: coins, from: nil, at: purchased),
                transaction(coins, coins, product: "bench.coins", type: "Consumable", at: purchased, expires: nil),
            ]
            generated.append(contentsOf: base.prefix(count))
            var period: Int64 = 1
            while generated.count < count {
                if generated.count % 2 == 1 {
                    let at = purchased + period * 30 * day
                    generated.append(
                        transaction(
                            "\(sub)\(period)", sub, product: "bench.monthly", type: "Auto-Renewable Subscription",
                            at: at,
                            expires: at + 30 * day))
                    period += 1
                } else {
                    generated.append(
                        .balanceDebited(
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
            -- Written in the log's first form (users' events in clear, streams by user id): such
            -- users are legacy subjects, as migration 0047 registers them.
            INSERT INTO identity.subjects (user_id, subject)
            SELECT substr(stream_id, 6), substr(stream_id, 6) FROM es.streams WHERE stream_id LIKE 'user:%'
            ON CONFLICT DO NOTHING;
            ANALYZE es.events;
            """)
    }
}
