import Infrastructure
import Ledger

/// Where a CONSUMPTION_REQUEST stands (`apple.consumption_requests.state`).
package enum ConsumptionRequestState: String, Sendable, Equatable, CaseIterable {
    /// Still to answer: an attempt is due at `next_attempt_at`.
    case pending
    /// Apple took the answer.
    case answered
    /// Apple refused the answer (4xx): sending it again would not help.
    case rejected
    /// Apple's 12 h window closed before an answer went through.
    case expired
    /// Nothing is sent: no `consumption` config, no consent, or a transaction the ledger lacks.
    case skipped
}

/// Where the responder leaves a request after deciding or attempting.
package struct ConsumptionSettlement: Sendable, Equatable {
    package var state: ConsumptionRequestState
    package var attempts: Int
    package var nextAttemptAt: Int64
    package var lastError: String?
}

/// The responder's decisions, without I/O (docs/api.md §5, CONSUMPTION_REQUEST): whether to
/// answer a request now, what to send, and where an attempt leaves it. The shell
/// (`ConsumptionResponder`) reads the request and the ledger, asks here, and performs.
package enum ConsumptionPlanner {
    /// First retry after this long; doubling after each failure, at most `maxBackoffMillis`.
    package static let firstBackoffMillis: Int64 = 60_000
    package static let maxBackoffMillis: Int64 = 60 * 60_000

    package enum Decision: Sendable, Equatable {
        /// Send this (attempt number `attempt`, from 1).
        case send(ConsumptionInformationFields, attempt: Int)
        /// Send nothing; the request ends in `settlement`.
        case finish(ConsumptionSettlement)
    }

    /// What Send Consumption Information v2 carries, in Apple's terms.
    package struct ConsumptionInformationFields: Sendable, Equatable {
        package var customerConsented: Bool
        package var sampleContentProvided: Bool
        package var deliveryStatus: String
        package var consumptionPercentage: Int64?
        package var refundPreference: String?
    }

    /// - Parameters:
    ///   - settings: the `consumption` config of the transaction's app (nil: none, or no such app).
    ///   - info: what the ledger knows of the transaction now (nil: it has no such transaction).
    package static func decide(
        _ request: ConsumptionRequestsTable.Row, settings: ConsumptionInfo.Settings?, info: ConsumptionInfo?, now: Int64
    ) -> Decision {
        func finish(_ state: ConsumptionRequestState, _ why: String) -> Decision {
            .finish(
                ConsumptionSettlement(
                    state: state, attempts: request.attempts, nextAttemptAt: request.nextAttemptAt, lastError: why))
        }
        guard now < request.deadline else {
            return finish(.expired, "Apple's 12 h window to answer closed")
        }
        guard let settings else {
            return finish(.skipped, "the transaction's app has no consumption config")
        }
        guard settings.customerConsented else {
            return finish(.skipped, "consumption.customerConsented is false: nothing is shared without consent")
        }
        guard let info else {
            return finish(.skipped, "the ledger has no transaction \(request.transactionId)")
        }
        return .send(
            ConsumptionInformationFields(
                customerConsented: true, sampleContentProvided: settings.sampleContentProvided,
                deliveryStatus: info.deliveryStatus.rawValue,
                consumptionPercentage: info.consumptionPercentage.map(Int64.init),
                refundPreference: info.refundPreference(settings)?.rawValue),
            attempt: request.attempts + 1)
    }

    /// Where attempt `attempt`, answered with `outcome`, leaves the request. An unavailable Apple
    /// is tried again with a doubling backoff while the window is open.
    package static func settle(
        _ request: ConsumptionRequestsTable.Row, attempt: Int, outcome: AppleRequestOutcome, error: String?, now: Int64
    ) -> ConsumptionSettlement {
        switch outcome {
        case .accepted:
            return ConsumptionSettlement(state: .answered, attempts: attempt, nextAttemptAt: now, lastError: nil)
        case .rejected, .refused:
            return ConsumptionSettlement(state: .rejected, attempts: attempt, nextAttemptAt: now, lastError: error)
        case .unavailable:
            let wait = min(maxBackoffMillis, firstBackoffMillis << Int64(min(max(attempt - 1, 0), 20)))
            let next = now + wait
            guard next < request.deadline else {
                return ConsumptionSettlement(
                    state: .expired, attempts: attempt, nextAttemptAt: now,
                    lastError: (error ?? "Apple unavailable") + "; Apple's 12 h window closes before the next try")
            }
            return ConsumptionSettlement(state: .pending, attempts: attempt, nextAttemptAt: next, lastError: error)
        }
    }
}
