import Ledger
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

/// The replay's two-thread fold of a batch gives what folding the same events one by one
/// through `LedgerWorld` gives: the same chains, accounts, stream positions and owners.
@Suite struct ReplayStateTests {
    static func log(users: Int) -> [(seq: Int64, event: LedgerEvent)] {
        var events: [LedgerEvent] = []
        for n in 0..<users {
            let otid = String(1_000 + n)
            let user = "u-\(n)"
            let transaction = Transaction(
                transactionId: otid, originalTransactionId: otid, productId: "com.example.game.coins100",
                bundleId: "com.example.game", type: "Consumable", purchaseDate: Int64(n), signedDate: Int64(n))
            events.append(.transactionRecorded(transaction))
            events.append(.chainClaimed(userId: user, originalTransactionId: otid, from: nil, at: Int64(n)))
            events.append(
                .notificationReceived(
                    NotificationFact(notificationUUID: "n-\(n)", notificationType: "TEST", signedDate: Int64(n))))
            if n % 3 == 0 {
                events.append(.chainReleased(userId: user, originalTransactionId: otid, to: "u-0", at: Int64(n)))
                events.append(.chainClaimed(userId: "u-0", originalTransactionId: otid, from: user, at: Int64(n)))
            }
            events.append(.renewalInfoRecorded(RenewalInfo(originalTransactionId: otid, signedDate: Int64(n))))
        }
        return events.enumerated().map { (Int64($0.offset + 1), $0.element) }
    }

    @Test func theParallelFoldOfABatchIsTheFoldOfItsEventsInOrder() {
        let batch = Self.log(users: 1200)
        // Two batches, each large enough for the two-thread path: the second must continue
        // the first (chains claimed in one and renewed in the other).
        let middle = batch.count / 2
        #expect(middle >= 1024)
        var parallel = ReplayState()
        // The first batch in two parts, as two decoding threads hand it over, in order.
        parallel.apply([Array(batch[..<(middle / 3)]), Array(batch[(middle / 3)..<middle])])
        parallel.apply([Array(batch[middle...])])
        var sequential = LedgerWorld()
        for (seq, event) in batch { sequential.apply(event, seq: seq) }
        #expect(parallel.events == batch.count)
        #expect(parallel.world.chains == sequential.chains)
        #expect(parallel.world.accounts == sequential.accounts)
        #expect(parallel.world.chainPositions == sequential.chainPositions)
        #expect(parallel.world.accountPositions == sequential.accountPositions)
        #expect(parallel.owners.count == 1200)
        #expect(
            parallel.owners["1000"] == "u-0" && parallel.owners["1001"] == "u-1" && parallel.owners["1003"] == "u-0")
        for n in [0, 1, 3, 599, 1199] { #expect(parallel.version(of: "u-\(n)") == sequential.version(of: "u-\(n)")) }
    }

    @Test func reservingRoomAfterTheFirstBatchExtrapolatesItsKeysAndChangesNoResult() {
        let batch = Self.log(users: 1200)
        let first = 600
        var reserved = ReplayState()
        reserved.apply([Array(batch[..<first])])
        let usersSoFar = reserved.world.accounts.count
        reserved.reserve(extrapolatingTo: batch.count)
        // Users arrive evenly in this log: room for about all of them (and a tenth more).
        let expected = Int(Double(usersSoFar) * Double(batch.count) / Double(first) * 1.1)
        #expect(reserved.world.accounts.capacity >= expected)
        #expect(reserved.world.accountPositions.capacity >= expected)
        #expect(reserved.owners.capacity >= reserved.owners.count * batch.count / first)
        reserved.apply([Array(batch[first...])])
        var plain = ReplayState()
        plain.apply([batch])
        #expect(reserved.world.chains == plain.world.chains)
        #expect(reserved.world.accounts == plain.world.accounts)
        #expect(reserved.owners == plain.owners)
        #expect(reserved.events == plain.events)
    }
}
