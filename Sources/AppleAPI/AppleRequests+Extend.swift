import AppStore
import EventStore
import Infrastructure
import Ledger

extension AppleRequests {
    /// What an extension came to (the route's answer).
    package struct ExtendOutcome: Sendable {
        package var record: RenewalExtension
        /// Apple's answer was recorded and the chain's newest facts fetched and recorded.
        package var refreshed: Bool
        /// Who owns the chain (nil: nobody claimed it yet): the answer carries their document.
        package var owner: String?
    }

    /// `POST /v1/subscriptions/{originalTransactionId}/extend` (admin, api.md §5): Apple's Extend
    /// a Subscription Renewal Date for a recorded auto-renewable chain, in the environment the
    /// chain lives in, with its app's key. Whatever Apple answers is recorded
    /// (`RenewalExtensionRequested` on the chain's stream, under its lock), an unreachable Apple
    /// too, so support sees every attempt. When Apple extended it, the chain's status is asked
    /// at once and recorded as a sync records it, so the new expiry counts now rather than when
    /// the RENEWAL_EXTENDED notification arrives (that one is then a duplicate of what it carries).
    package func extendRenewalDate(
        originalTransactionId otid: String, request: RenewalDateExtension, context: RequestContext
    ) throws(ServiceError) -> ExtendOutcome {
        // Before Apple is asked: what it answers could not be recorded (rolling upgrade in progress).
        try ledger.projectionVersions.requireCurrent()
        let (latest, owner) = try ledger.read { connection throws(ServiceError) in
            try recordedChain(otid, on: connection)
        }
        guard let latest else { throw .notFound("no transaction chain \(otid) has been recorded") }
        guard latest.productType == .subscription else {
            throw .notAutoRenewable("\(otid) is a \(latest.type), not an auto-renewable subscription: only those renew")
        }
        let environment = AppStoreServerEnvironment(rawValue: latest.environment)
        let client = try serverAPIClient(bundleId: latest.bundleId, asking: "extending")
        var attempt = RenewalExtension(
            originalTransactionId: otid, environment: latest.environment, extendByDays: Int64(request.extendByDays),
            extendReasonCode: Int64(request.extendReasonCode), requestIdentifier: request.requestIdentifier,
            outcome: .unavailable, at: ledger.clock())
        var failure: ServiceError?
        do throws(AppStoreServerError) {
            let answer = try client.extendRenewalDate(otid, request, environment: environment)
            attempt.environment = answer.environment.rawValue
            attempt.outcome = answer.success ? AppleRequestOutcome.accepted : .refused
            attempt.effectiveDate = answer.effectiveDate
            attempt.webOrderLineItemId = answer.webOrderLineItemId
            if !answer.success { attempt.detail = "Apple did not extend it (success: false)" }
        } catch {
            if case .invalidArgument = error { throw .appStoreServer(error) }  // nothing was sent
            if case .rejected = error { attempt.outcome = .rejected } else { attempt.outcome = .unavailable }
            attempt.appleErrorCode = error.appleErrorCode
            attempt.detail = error.description
            failure = .appStoreServer(error)
        }
        attempt.at = ledger.clock()
        try ledger.unitOfWork { connection throws(ServiceError) in
            try database { () throws(DatabaseError) in
                try ledger.repository.lock([LedgerStream.chain(otid)], on: connection)
            }
            let owner = try lockOwner(ofChain: otid, on: connection)
            _ = try ledger.repository.append(
                [(.renewalExtensionRequested(attempt), nil)], metadata: context.metadata, expected: [:],
                idempotencyKey: nil, on: connection)
            try restoreOwnerDocument(owner, after: .renewalExtensionRequested(attempt), now: attempt.at, on: connection)
        }
        if let failure { throw failure }
        guard attempt.outcome == .accepted else {
            return ExtendOutcome(record: attempt, refreshed: false, owner: owner)
        }
        do {
            let statuses = try client.allSubscriptionStatuses(
                otid, environment: AppStoreServerEnvironment(rawValue: attempt.environment ?? latest.environment))
            let batch = try verifiedBatch(transactions: [], statuses: statuses)
            _ = try ingestion.record(batch, claimant: nil, context: context)
            return ExtendOutcome(record: attempt, refreshed: true, owner: owner)
        } catch {
            // Extended at Apple and recorded as such; the new expiry arrives with Apple's notification.
            ledger.logger.warning(
                "extend: the refreshed status could not be recorded",
                [
                    "originalTransactionId": otid, "request.id": context.requestId, "error": "\(error)",
                ])
            return ExtendOutcome(record: attempt, refreshed: false, owner: owner)
        }
    }
}
