import EventStore
import Ledger

@testable import Infrastructure
@testable import Ingest
@testable import Service

/// Facts, streams and append answers for `IngestPlannerTests`, built in memory.
extension IngestPlannerTests {
    static func purchase(_ otid: String, token: String? = nil, signed: Int64 = t0) -> Transaction {
        Transaction(
            transactionId: otid, originalTransactionId: otid, productId: "com.example.game.removeads",
            bundleId: "com.example.game", type: "Non-Consumable", purchaseDate: t0, signedDate: signed,
            appAccountToken: token)
    }

    static func notification(_ uuid: String, about otid: String?) -> NotificationFact {
        NotificationFact(
            notificationUUID: uuid, notificationType: "ONE_TIME_CHARGE", signedDate: t0, originalTransactionId: otid)
    }

    static func posted(_ transactions: Transaction...) -> FactBatch {
        FactBatch(transactions: transactions.map { ($0, "jws") })
    }

    static func pushed(_ uuid: String, _ transaction: Transaction) -> FactBatch {
        FactBatch(
            transactions: [(transaction, "jws")],
            notification: (notification(uuid, about: transaction.originalTransactionId), "payload"))
    }

    static func stream(_ events: LedgerEvent..., lastSeq: Int64 = 10) -> Loaded {
        Loaded(events: events, version: Int64(events.count), lastSeq: lastSeq)
    }

    static func claimed(_ user: String, _ otid: String) -> LedgerEvent {
        .chainClaimed(userId: user, originalTransactionId: otid, from: nil, at: t0 + 1)
    }

    static func recorded(_ append: IngestPlanner.Append, firstSeq: Int64 = 100) -> [RecordedEvent] {
        append.events.enumerated().map { index, decided in
            RecordedEvent(
                seq: firstSeq + Int64(index), tx: 1, stream: decided.event.stream, version: 1,
                type: decided.event.typeName, schemaVersion: 1, data: [], metadata: [], payload: nil, recordedAt: t0)
        }
    }
}
