import AppStore
import Infrastructure
import Ingest
import Ledger

extension AppleRequests {
    /// What a sync fetched from Apple and what recording it did.
    package struct SyncOutcome {
        package var outcome: IngestOutcome
        package var bundleId: String
        package var environment: String
        /// Signed transactions and renewal infos Apple answered.
        package var fetched: Int
    }

    /// `POST /v1/users/{userId}/sync` (api.md §5): the whole history of the customer who made
    /// `transactionId`, from Get Transaction History (every page) and Get All Subscription
    /// Statuses, verified exactly as ingestion verifies and recorded for `userId` through the
    /// same path (claims follow `transferPolicy`). Apple re-signs every answer, so what the log
    /// has already — equal but for `signedDate` — is a duplicate: a second sync records nothing.
    ///
    /// The app is the one whose key finds the transaction: each app with a `serverAPI` key is
    /// asked in turn while Apple answers "not found" (4040010) in both environments.
    package func sync(userId: String, transactionId: String, context: RequestContext) throws(ServiceError)
        -> SyncOutcome
    {
        let apps = ledger.configuration.apps.filter { $0.serverAPI != nil }
        guard !apps.isEmpty else {
            throw .serverAPINotConfigured("no app has a serverAPI key: sync asks Apple's App Store Server API")
        }
        var lastNotFound: AppStoreServerError?
        for app in apps {
            let client = app.serverAPI!.client(bundleId: app.bundleId)
            let history: TransactionHistory
            let statuses: SubscriptionStatuses
            do {
                history = try client.transactionHistory(transactionId)
                statuses = try client.allSubscriptionStatuses(transactionId, environment: history.environment)
            } catch {
                if case .rejected(_, let code?, _) = error, code == AppStoreServerError.transactionIdNotFound,
                    apps.count > 1
                {
                    lastNotFound = error
                    continue
                }
                throw .appStoreServer(error)
            }
            let batch = try verifiedBatch(transactions: history.signedTransactions, statuses: statuses)
            let outcome = try ingestion.record(batch, claimant: userId, context: context)
            return SyncOutcome(
                outcome: outcome, bundleId: app.bundleId, environment: history.environment.rawValue,
                fetched: batch.transactions.count + batch.renewals.count)
        }
        throw .appStoreServer(lastNotFound!)
    }

    /// Every signed item of Apple's answers, verified as ingestion verifies them (a payload that
    /// does not verify fails the whole answer: nothing of an answer that is not Apple's is kept).
    package func verifiedBatch(transactions: [String], statuses: SubscriptionStatuses) throws(ServiceError)
        -> FactBatch
    {
        var batch = FactBatch()
        var seen: Set<String> = []
        func add(transaction jws: String) throws(ServiceError) {
            let verified: JWSTransaction
            do { verified = try ledger.verifier.verifyTransaction(jws) } catch { throw .verificationFailed(error) }
            let fact = try FactMapping.transaction(verified)
            // The statuses repeat the latest transaction of each chain the history holds.
            guard seen.insert(fact.transactionId + "|" + String(fact.signedDate)).inserted else { return }
            batch.transactions.append((fact, jws))
        }
        for jws in transactions { try add(transaction: jws) }
        for item in statuses.items {
            if let jws = item.signedTransactionInfo { try add(transaction: jws) }
            if let jws = item.signedRenewalInfo {
                let verified: JWSRenewalInfo
                do { verified = try ledger.verifier.verifyRenewalInfo(jws) } catch { throw .verificationFailed(error) }
                batch.renewals.append((try FactMapping.renewalInfo(verified), jws))
            }
        }
        guard !batch.transactions.isEmpty else {
            throw .appleUnavailable("Apple answered a history without any transaction")
        }
        return batch
    }
}
