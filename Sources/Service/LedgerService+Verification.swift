import AppStore
import Ledger

extension LedgerService {
    /// Verifies a V2 notification and its nested signed data; renewal info is bound to the
    /// transaction's chain through originalTransactionId.
    func verifyNotification(_ signedPayload: String) throws(ServiceError) -> FactBatch {
        let verified: VerifiedNotification
        do { verified = try verifier.verifyNotification(signedPayload) } catch { throw .verificationFailed(error) }
        var batch = FactBatch()
        let transaction = try verified.transaction.map { t throws(ServiceError) in try FactMapping.transaction(t) }
        let renewal = try verified.renewalInfo.map { r throws(ServiceError) in try FactMapping.renewalInfo(r) }
        if let transaction, let renewal, transaction.originalTransactionId != renewal.originalTransactionId {
            throw .verificationFailed(VerificationError(
                .malformed, "signedRenewalInfo belongs to chain \(renewal.originalTransactionId), the transaction to \(transaction.originalTransactionId)"))
        }
        if let transaction { batch.transactions = [(transaction, verified.payload.data?.signedTransactionInfo)] }
        if let renewal { batch.renewals = [(renewal, verified.payload.data?.signedRenewalInfo)] }
        batch.notification = (try FactMapping.notification(verified.payload, transaction: transaction, renewal: renewal),
                              signedPayload)
        return batch
    }

    /// StoreKit 1: verifyReceipt (production first, sandbox on 21007), then the same facts as StoreKit 2.
    func verifyReceipt(_ receipt: String) throws(ServiceError) -> FactBatch {
        guard let receipts else { throw .appleUnavailable("verifyReceipt is not configured") }
        let secret = configuration.apps.first { $0.sharedSecret != nil }?.sharedSecret
        let verification: LegacyReceipt
        do {
            verification = try receipts.verify(receiptData: receipt, password: secret)
        } catch {
            switch error {
            case .rejected(let status):
                throw .receiptRejected(appleStatus: status, detail: "verifyReceipt answered status \(status)")
            case .unavailable(let detail):
                throw .appleUnavailable(detail)
            case .malformedResponse(let detail):
                throw .appleUnavailable("verifyReceipt answered something unreadable: \(detail)")
            }
        }
        guard let app = configuration.apps.first(where: { $0.bundleId == verification.bundleId }) else {
            throw .verificationFailed(VerificationError(.unknownApp, "receipt of bundle \(verification.bundleId ?? "?") is not configured"))
        }
        if let environment = verification.environment, !app.environments.contains(environment) {
            throw .verificationFailed(VerificationError(.wrongEnvironment, "\(environment) receipts are not accepted for \(app.bundleId)"))
        }
        var batch = FactBatch()
        for transaction in verification.transactions {
            var fact = try FactMapping.transaction(transaction)
            if fact.bundleId.isEmpty { fact.bundleId = app.bundleId }
            batch.transactions.append((fact, String(decoding: transaction.rawJSON, as: UTF8.self)))
        }
        for renewal in verification.renewalInfos {
            batch.renewals.append((try FactMapping.renewalInfo(renewal), String(decoding: renewal.rawJSON, as: UTF8.self)))
        }
        guard !batch.transactions.isEmpty else {
            throw .invalidRequest("the receipt holds no in-app purchase")
        }
        return batch
    }
}
