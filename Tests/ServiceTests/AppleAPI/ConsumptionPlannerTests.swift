import Ledger
import Testing

@testable import AppleAPI
@testable import Infrastructure
@testable import Service

/// The responder's decisions without I/O: when to send, what, and where an attempt leaves a request.
@Suite struct ConsumptionPlannerTests {
    static let t0: Int64 = 1_800_000_000_000
    static let request = ConsumptionRequestsTable.Row(
        notificationUUID: "n-1", originalTransactionId: "1", transactionId: "1", environment: "Sandbox",
        requestedAt: t0,
        deadline: t0 + ConsumptionRequestsTable.windowMillis, state: .pending, attempts: 0, nextAttemptAt: t0,
        lastError: nil)
    static let consent = ConsumptionInfo.Settings(
        customerConsented: true, sampleContentProvided: true, refundPreference: .grantProrated)
    static let info = ConsumptionInfo(
        transactionId: "1", productType: .consumable, deliveryStatus: .delivered, consumptionPercentage: 30000)

    @Test func aDeliveredConsumableIsSentWithItsShareAndTheConfiguredPreference() {
        let decision = ConsumptionPlanner.decide(
            Self.request, settings: Self.consent, info: Self.info, now: Self.t0 + 1)
        #expect(
            decision
                == .send(
                    .init(
                        customerConsented: true, sampleContentProvided: true, deliveryStatus: "DELIVERED",
                        consumptionPercentage: 30000, refundPreference: "GRANT_PRORATED"),
                    attempt: 1))
        // GRANT_PRORATED with nothing spent would be refused by Apple: the preference is left out.
        var untouched = Self.info
        untouched.consumptionPercentage = 0
        guard
            case .send(let fields, _) = ConsumptionPlanner.decide(
                Self.request, settings: Self.consent, info: untouched, now: Self.t0 + 1)
        else {
            Issue.record("expected a send")
            return
        }
        #expect(fields.refundPreference == nil)
        #expect(fields.consumptionPercentage == 0)
    }

    @Test func nothingIsSentPastTheWindowWithoutConfigConsentOrTransaction() {
        func state(_ settings: ConsumptionInfo.Settings?, _ info: ConsumptionInfo?, _ now: Int64)
            -> ConsumptionRequestState?
        {
            if case .finish(let settlement) = ConsumptionPlanner.decide(
                Self.request, settings: settings, info: info, now: now)
            {
                return settlement.state
            }
            return nil
        }
        #expect(state(Self.consent, Self.info, Self.request.deadline) == .expired)
        #expect(state(nil, Self.info, Self.t0) == .skipped)
        #expect(state(.init(customerConsented: false, sampleContentProvided: false), Self.info, Self.t0) == .skipped)
        #expect(state(Self.consent, nil, Self.t0) == .skipped)
        #expect(state(Self.consent, Self.info, Self.request.deadline - 1) == nil, "sent up to the last millisecond")
    }

    @Test func unavailableIsRetriedWithADoublingBackoffInsideTheWindowOnly() {
        var request = Self.request
        var now = Self.t0
        var waits: [Int64] = []
        while true {
            let settlement = ConsumptionPlanner.settle(
                request, attempt: request.attempts + 1, outcome: .unavailable, error: "HTTP 503", now: now)
            guard settlement.state == .pending else {
                #expect(settlement.state == .expired)
                #expect(settlement.lastError?.contains("HTTP 503") == true)
                break
            }
            waits.append(settlement.nextAttemptAt - now)
            #expect(settlement.attempts == request.attempts + 1)
            request.attempts = settlement.attempts
            now = settlement.nextAttemptAt
        }
        #expect(Array(waits.prefix(4)) == [60_000, 120_000, 240_000, 480_000])
        #expect(waits.max() == ConsumptionPlanner.maxBackoffMillis)
        #expect(now < request.deadline, "never scheduled past the deadline")
        #expect(waits.count >= 14, "about a dozen hourly tries fill the window: \(waits.count)")
    }

    @Test func acceptedAndRejectedAreFinal() {
        #expect(
            ConsumptionPlanner.settle(Self.request, attempt: 1, outcome: .accepted, error: nil, now: Self.t0).state
                == .answered)
        let rejected = ConsumptionPlanner.settle(
            Self.request, attempt: 2, outcome: .rejected, error: "4000036", now: Self.t0)
        #expect(rejected.state == .rejected)
        #expect(rejected.attempts == 2)
        #expect(rejected.lastError == "4000036")
    }
}
