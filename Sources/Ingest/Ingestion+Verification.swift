import AppStore
import Infrastructure
import Ledger

extension Ingestion {
    /// Verifies a V2 notification and its nested signed data; renewal info is bound to the
    /// transaction's chain through originalTransactionId.
    package func verifyNotification(_ signedPayload: String) throws(ServiceError) -> FactBatch {
        let verified: VerifiedNotification
        do { verified = try ledger.verifier.verifyNotification(signedPayload) } catch {
            throw .verificationFailed(error)
        }
        var batch = FactBatch()
        let transaction = try verified.transaction.map { t throws(ServiceError) in try FactMapping.transaction(t) }
        let renewal = try verified.renewalInfo.map { r throws(ServiceError) in try FactMapping.renewalInfo(r) }
        if let transaction, let renewal, transaction.originalTransactionId != renewal.originalTransactionId {
            throw .verificationFailed(
                VerificationError(
                    .malformed,
                    "signedRenewalInfo belongs to chain \(renewal.originalTransactionId), the transaction to \(transaction.originalTransactionId)"
                ))
        }
        if let transaction { batch.transactions = [(transaction, verified.payload.data?.signedTransactionInfo)] }
        if let renewal { batch.renewals = [(renewal, verified.payload.data?.signedRenewalInfo)] }
        batch.notification = (
            try FactMapping.notification(
                verified.payload, transaction: transaction, renewal: renewal, appTransaction: verified.appTransaction),
            signedPayload
        )
        return batch
    }

    /// verifyReceipt's status for "the shared secret does not match the receipt's app".
    package static let sharedSecretMismatch = 21004

    /// StoreKit 1: verifyReceipt (production first, sandbox on 21007), then the same facts as StoreKit 2.
    /// A receipt that cannot be one is a 400 before anything is sent to Apple.
    package func verifyReceipt(_ receipt: String) throws(ServiceError) -> FactBatch {
        do { try AppReceipt.checkShape(receipt) } catch { throw .invalidRequest(error.description) }
        guard let receipts = ledger.receipts else { throw .appleUnavailable("verifyReceipt is not configured") }
        // The receipt does not say whose it is before Apple answers, so with several apps each
        // shared secret is tried in turn while Apple answers 21004 (secret does not match).
        var secrets: [String?] = []
        for app in ledger.configuration.apps {
            if let secret = app.sharedSecret, !secrets.contains(secret) { secrets.append(secret) }
        }
        if secrets.isEmpty { secrets = [nil] }
        var verified: LegacyReceipt?
        for (index, secret) in secrets.enumerated() where verified == nil {
            do {
                verified = try receipts.verify(receiptData: receipt, password: secret, askedAt: ledger.clock())
            } catch {
                switch error {
                case .rejected(Self.sharedSecretMismatch) where index < secrets.count - 1:
                    continue
                case .rejected(let status):
                    throw .receiptRejected(appleStatus: status, detail: "verifyReceipt answered status \(status)")
                case .unavailable(let detail):
                    throw .appleUnavailable(detail)
                case .malformedResponse(let detail):
                    throw .appleUnavailable("verifyReceipt answered something unreadable: \(detail)")
                case .notAReceipt(let detail):
                    throw .invalidRequest(detail)
                }
            }
        }
        guard let verification = verified else { throw .appleUnavailable("verifyReceipt gave no answer") }
        guard let app = ledger.configuration.apps.first(where: { $0.bundleId == verification.bundleId }) else {
            throw .verificationFailed(
                VerificationError(.unknownApp, "receipt of bundle \(verification.bundleId ?? "?") is not configured"))
        }
        if let environment = verification.environment, !app.environments.contains(environment) {
            throw .verificationFailed(
                VerificationError(.wrongEnvironment, "\(environment) receipts are not accepted for \(app.bundleId)"))
        }
        var batch = FactBatch()
        for transaction in verification.transactions {
            var fact = try FactMapping.transaction(transaction)
            if fact.bundleId.isEmpty { fact.bundleId = app.bundleId }
            batch.transactions.append((fact, String(decoding: transaction.rawJSON, as: UTF8.self)))
        }
        for renewal in verification.renewalInfos {
            batch.renewals.append(
                (try FactMapping.renewalInfo(renewal), String(decoding: renewal.rawJSON, as: UTF8.self)))
        }
        guard !batch.transactions.isEmpty else {
            throw .invalidRequest("the receipt holds no in-app purchase")
        }
        return batch
    }
}
