import AppStore
import EventStore
import Foundation
import Infrastructure
import JSON
import Ledger

extension AppleRequests {
    /// What answering one Retention Messaging request came to: Apple's `RealtimeResponseBody`
    /// and the record of it.
    package struct RetentionOutcome: Sendable {
        package var answer: RetentionAnswer
        /// `promotionalOffer.promotionalOfferSignatureV2`, when the answer is an offer.
        package var offerSignature: String?
        /// false: Apple asked again with the same requestIdentifier; answered, recorded once.
        package var recorded: Bool
    }

    /// Answers Apple's Retention Messaging request (docs/api.md §8): verifies it as Apple's
    /// `verifyAndDecodeRealtimeRequest` does, reads the chain's tenure, lets the app's first
    /// matching rule decide, and records the request with its answer (a
    /// `RetentionRequestAnswered` event on the chain's stream, under the chain's lock, and its
    /// `apple.retention_requests` row) in one transaction. Nothing here calls Apple: Apple
    /// waits for the answer only briefly. A payload that does not verify records nothing.
    package func answerRetentionRequest(
        signedPayload: String, signers: OfferRoutes.SignerLookup, context: RequestContext
    ) throws(ServiceError) -> RetentionOutcome {
        let request: RealtimeRequest
        do { request = try ledger.verifier.verifyRealtimeRequest(signedPayload) } catch {
            throw .verificationFailed(error)
        }
        try ledger.projectionVersions.requireCurrent()
        let rules = ledger.configuration.apps.first { $0.bundleId == request.bundleId }?.retention
        let chainId = request.originalTransactionId
        return try ledger.unitOfWork { connection throws(ServiceError) -> RetentionOutcome in
            try database { () throws(DatabaseError) in
                try ledger.repository.lock([LedgerStream.chain(chainId)], on: connection)
            }
            // The owner's document is stored again after the append (`restoreOwnerDocument`).
            let owner = try lockOwner(ofChain: chainId, on: connection)
            let seen = try database { () throws(DatabaseError) in
                try connection.query(RetentionRequestsTable.exists(request.requestIdentifier)).count > 0
            }
            let loaded = try ledger.repository.load(streams: [LedgerStream.chain(chainId)], on: connection)
            let chain = Chain.fold(loaded.values.flatMap(\.events))
            // Tenure counts from the chain's first purchase; a chain the ledger has not recorded
            // yet has tenure 0 (rules with minTenureMonths > 0 then do not match).
            let firstPurchase = chain.latestTransactions.map { $0.originalPurchaseDate ?? $0.purchaseDate }.min()
            let tenure = firstPurchase.map { RetentionRules.tenureMonths(from: $0, to: request.signedDate) } ?? 0
            let chosen = rules?.choose(
                productId: request.productId, userLocale: request.userLocale, tenureMonths: tenure)
            var answer = RetentionAnswer(
                requestIdentifier: request.requestIdentifier, originalTransactionId: chainId,
                productId: request.productId, userLocale: request.userLocale, environment: request.environment,
                signedDate: request.signedDate, bundleId: request.bundleId, tenureMonths: tenure,
                ruleIndex: chosen.map { Int64($0.index) }, answer: chosen?.rule.action.kind ?? .none, at: ledger.clock()
            )
            var signature: String?
            switch chosen?.rule.action {
            case .message(let messageId)?:
                answer.messageIdentifier = messageId
            case .alternateProduct(let productId, let messageId)?:
                answer.alternateProductId = productId
                answer.messageIdentifier = messageId
            case .promotionalOffer(let offerId, let messageId)?:
                answer.offerIdentifier = offerId
                answer.messageIdentifier = messageId
                // Signed as POST /v1/offers/signatures signs it (the V2 JWS Apple's
                // `PromotionalOffer.promotionalOfferSignatureV2` takes), for the product Apple
                // asked about, bound to the chain through transactionId.
                guard let signer = signers(request.bundleId) else {
                    throw .serverAPINotConfigured("\(request.bundleId) has no serverAPI key to sign retention offers")
                }
                do {
                    signature = try signer.promotionalOfferV2(
                        productId: request.productId, offerIdentifier: offerId, transactionId: chainId, nonce: UUID(),
                        now: answer.at)
                } catch {
                    throw .serverAPINotConfigured("\(request.bundleId): \(error)")
                }
            case nil:
                break
            }
            guard !seen else { return RetentionOutcome(answer: answer, offerSignature: signature, recorded: false) }
            let recorded = try ledger.repository.append(
                [(.retentionAnswered(answer), nil)], metadata: context.metadata, expected: [:], idempotencyKey: nil,
                on: connection)
            if let seq = recorded?.first?.seq {
                _ = try database { () throws(DatabaseError) in
                    try connection.execute(RetentionRequestsTable.insert(answer, seq: seq))
                }
            }
            try restoreOwnerDocument(owner, after: .retentionAnswered(answer), now: answer.at, on: connection)
            return RetentionOutcome(answer: answer, offerSignature: signature, recorded: true)
        }
    }
}

extension AppleRequests.RetentionOutcome {
    /// Apple's `RealtimeResponseBody`, as its library encodes it: one member, UUIDs upper case
    /// (Foundation's `JSONEncoder`), absent optionals omitted; `{}` when no rule matched.
    package var responseBody: [UInt8] {
        func uuid(_ id: String) -> String { id.uppercased() }
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        switch answer.answer {
        case .message:
            w.key("message")
            w.beginObject()
            w.key("messageIdentifier")
            w.string(uuid(answer.messageIdentifier!))
            w.endObject()
        case .alternateProduct:
            w.key("alternateProduct")
            w.beginObject()
            if let id = answer.messageIdentifier {
                w.key("messageIdentifier")
                w.string(uuid(id))
            }
            w.key("productId")
            w.string(answer.alternateProductId!)
            w.endObject()
        case .promotionalOffer:
            w.key("promotionalOffer")
            w.beginObject()
            if let id = answer.messageIdentifier {
                w.key("messageIdentifier")
                w.string(uuid(id))
            }
            w.key("promotionalOfferSignatureV2")
            w.string(offerSignature!)
            w.endObject()
        case .none:
            break
        }
        w.endObject()
        return w.bytes
    }
}
