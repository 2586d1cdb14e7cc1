/// In-memory fold throughput, for `make bench`. The only code in this target that reads a
/// clock; the domain never calls it.
public enum LedgerBenchmark {
    /// Folds `events` pre-built events (subscription chains with renewals, renewal infos,
    /// notifications and refunds; user streams with claims and debits) through
    /// `Chain.evolve` / `Account.evolve` on one core, stream by stream as a replay does,
    /// and returns events per second. Building the events is not timed.
    public static func foldThroughput(events: Int) -> Double {
        let streams = makeStreams(events: events)
        var total = 0
        var checksum = 0
        let clock = ContinuousClock()
        let start = clock.now
        for stream in streams {
            switch stream {
            case .chain(let events):
                var state = ChainState.initial
                for event in events { Chain.evolve(&state, event) }
                total += events.count
                checksum &+= state.transactionVersions.count
            case .user(let events):
                var state = Account.initial
                for event in events { Account.evolve(&state, event) }
                total += events.count
                checksum &+= state.chains.count
            }
        }
        let elapsed = start.duration(to: clock.now)
        precondition(checksum > 0)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(total) / max(seconds, 1e-9)
    }

    enum Stream {
        case chain([LedgerEvent])
        case user([LedgerEvent])
    }

    /// About 10 events per chain and 4 per user: a year of monthly renewals would be longer,
    /// a consumable chain shorter.
    static func makeStreams(events: Int) -> [Stream] {
        var streams: [Stream] = []
        var made = 0
        var n = 0
        let month: Int64 = 2_592_000_000
        let t0: Int64 = 1_767_225_600_000
        while made < events {
            n += 1
            let otid = String(2_000_000_000 + n)
            let user = "user-\(n)"
            var chain: [LedgerEvent] = []
            for period in 0..<4 {
                let start = t0 + Int64(period) * month
                let transaction = Transaction(
                    transactionId: period == 0 ? otid : "\(otid)-\(period)", originalTransactionId: otid,
                    productId: "com.example.game.pro.monthly", bundleId: "com.example.game",
                    type: "Auto-Renewable Subscription", purchaseDate: start, originalPurchaseDate: t0,
                    expiresDate: start + month, signedDate: start, webOrderLineItemId: "\(otid)\(period)",
                    transactionReason: period == 0 ? "PURCHASE" : "RENEWAL", price: 4990, currency: "USD",
                    storefront: "USA", subscriptionGroupIdentifier: "pro")
                chain.append(.transactionRecorded(transaction))
                chain.append(
                    .renewalInfoRecorded(
                        RenewalInfo(
                            originalTransactionId: otid, productId: transaction.productId,
                            autoRenewProductId: transaction.productId, autoRenewStatus: 1, signedDate: start,
                            renewalDate: start + month)))
            }
            chain.append(
                .notificationReceived(
                    NotificationFact(
                        notificationUUID: "uuid-\(n)", notificationType: "DID_RENEW", signedDate: t0 + 3 * month,
                        environment: "Production", originalTransactionId: otid, transactionId: "\(otid)-3")))
            if case .transactionRecorded(var refunded) = chain[6] {
                refunded.signedDate += 1000
                refunded.revocationDate = refunded.signedDate
                refunded.revocationReason = 0
                chain.append(.transactionRecorded(refunded))
            }
            let userEvents: [LedgerEvent] = [
                .chainClaimed(userId: user, originalTransactionId: otid, from: nil, at: t0),
                .balanceCredited(
                    userId: user, currency: "coins", amount: 100, idempotencyKey: "c\(n)", reason: "welcome", at: t0),
                .balanceDebited(
                    userId: user, currency: "coins", amount: 30, idempotencyKey: "d\(n)", reason: "sword",
                    balanceAfter: 70, at: t0 + 1),
                .entitlementGranted(userId: user, entitlement: "beta", reason: "tester", expiresAt: nil, at: t0),
            ]
            streams.append(.chain(chain))
            streams.append(.user(userEvents))
            made += chain.count + userEvents.count
        }
        return streams
    }
}
