import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The change feed over every docs/domain.md scenario through HTTP and real PostgreSQL (the
/// deliveries of `ShuffleTests`): in order they give the expected changes; delivered twice and
/// shuffled, no change is emitted twice and the changes end at the same document.
@Suite(.tags(.database)) final class ChangeFeedScenarioTests {
    static func withoutVersion(_ value: JSONValue?) -> JSONValue? {
        guard case .object(var members)? = value else { return value }
        members["version"] = nil
        return .object(members)
    }

    /// A change's identity for "emitted twice": what it says, not when it was written.
    static func identity(_ change: JSONValue) -> String {
        [change["type"], change["originalTransactionId"], change["transactionId"], change["details"]]
            .map { $0.map { String(decoding: $0.serialized(sortedKeys: true), as: UTF8.self) } ?? "-" }
            .joined(separator: "|")
    }

    @Test func inOrderTheExpectedChangesShuffledAndRepeatedNoneTwiceAndTheSameEnd() throws {
        let now = TestVectors.nowMillis
        let deliveries = ShuffleTests.deliveries(now: now)
        var rng = SplitMix64(seed: 20_261_202)
        let shuffled = (deliveries + deliveries).shuffled(using: &rng)
        let clock = TestClock()
        let inOrder = try TestService(clock: clock)
        defer { inOrder.stop() }
        let scrambled = try TestService(clock: clock)
        defer { scrambled.stop() }
        let a = inOrder.client()
        let b = scrambled.client()
        try ShuffleTests().deliver(deliveries, to: a)
        try ShuffleTests().deliver(shuffled, to: b)

        let ordered = try ChangeFeedTests.feed(a, userId: "u-shuffle", settled: inOrder.conninfo)
        #expect(
            Self.summary(ordered) == [
                "CONSUMABLE_PURCHASE 8000001", "CONSUMABLE_PURCHASE 8000002", "REFUND 8000002",  // consumables
                "NON_CONSUMABLE_PURCHASE 8000101", "REFUND 8000101", "REFUND_REVERSED 8000101",  // refund reversed
                "INITIAL_PURCHASE 8000201", "RENEWAL 8000201",  // renewal
                "INITIAL_PURCHASE 8000301",  // grace begins later, by time
                "INITIAL_PURCHASE 8000401", "CANCELLATION 8000401",  // voluntary expiry, later by time
                // The first period was long over when it was posted: the chain starts with its renewal.
                "RENEWAL 8000501", "REFUND 8000501",
                // The upgraded copy arrived first: access ends until the upgrade's own period arrives.
                "INITIAL_PURCHASE 8000601", "EXPIRATION 8000601", "PRODUCT_CHANGE 8000601",
                "INITIAL_PURCHASE 8000701", "REFUND 8000701",  // family sharing revoked
            ])
        let mixed = try ChangeFeedTests.feed(b, userId: "u-shuffle", settled: scrambled.conninfo)
        let identities = mixed.map(Self.identity)
        #expect(Set(identities).count == identities.count, "a change emitted twice: \(identities)")
        for (api, changes) in [(a, ordered), (b, mixed)] {
            #expect(Self.withoutVersion(changes.last?["customer"]) == Self.withoutVersion(try api.user("u-shuffle")))
        }

        // Time alone: the grace period begins (period end + 1 h), the cancelled one expires (+2 h).
        clock.set(now + 3 * hour)
        for (service, before) in [(inOrder, ordered.count), (scrambled, mixed.count)] {
            let changes = try ChangeFeedTests.feed(service.client(), userId: "u-shuffle", within: 15) {
                $0.count >= before + 2
            }
            #expect(Self.summary(Array(changes.dropFirst(before))) == ["BILLING_ISSUE 8000301", "EXPIRATION 8000401"])
            #expect(
                changes.dropFirst(before).map { $0["occurredAt"]?.stringValue } == [
                    RFC3339.format(now + hour), RFC3339.format(now + 2 * hour),
                ])
            #expect(
                Self.withoutVersion(changes.last?["customer"])
                    == Self.withoutVersion(try service.client().user("u-shuffle")))
        }
    }

    static func summary(_ changes: [JSONValue]) -> [String] {
        changes.map { "\($0["type"]?.stringValue ?? "?") \($0["originalTransactionId"]?.stringValue ?? "-")" }
    }
}
