import AppStore
import HTTP
import Infrastructure
import JSON
import Ledger

/// `POST /v1/apple/retention-message` (docs/api.md §8): Apple's Retention Messaging calls it
/// with `{"signedPayload"}` (Apple's `RealtimeRequestBody`) and shows what it answers (Apple's
/// `RealtimeResponseBody`). No API key, as `POST /v1/notifications/apple`: only a payload Apple
/// signed for a configured app gets in.
///
/// Each request is counted in `iap_retention_requests_total{bundle_id,result}` by what it got:
/// the answer's kind, `rejected` (not Apple's signed request for a configured app: 4xx, no app
/// known) or `failed` (it could not be answered, e.g. the database was down: Apple then shows
/// its default message); both with `bundle_id` empty.
package struct RetentionRoutes: Sendable {
    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }
    package let signers: OfferRoutes.SignerLookup
    package let requests: Counter

    package init(apple: AppleRequests, signers: @escaping OfferRoutes.SignerLookup, registry: MetricsRegistry) {
        self.apple = apple
        self.signers = signers
        requests = registry.counter(
            "iap_retention_requests_total",
            help:
                "Retention Messaging requests by app and what they got (message, alternate_product, promotional_offer, none; rejected, failed).",
            labels: ["bundle_id", "result"])
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/apple/retention-message") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                do throws(ServiceError) { return try answer(request) } catch {
                    requests.increment(["", Self.result(of: error)])
                    throw error
                }
            }
        }
    }

    /// The metric's word for a request the service did not answer.
    package static func result(of error: ServiceError) -> String {
        switch error {
        case .invalidRequest, .verificationFailed: "rejected"
        default: "failed"
        }
    }

    /// The metric's word for an answer: Apple's member name in snake case, as the labels are.
    package static func result(of kind: RetentionAnswer.Kind) -> String {
        switch kind {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        case .none: "none"
        }
    }

    private func answer(_ request: HTTPRequest) throws(ServiceError) -> HTTPResponse {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(request.body) } catch {
            throw .invalidRequest("the body is not valid JSON: \(error)")
        }
        guard let body = parsed.objectValue else { throw .invalidRequest("the body must be a JSON object") }
        guard let signedPayload = body["signedPayload"]?.stringValue, !signedPayload.isEmpty else {
            throw .invalidRequest("signedPayload is required")
        }
        let outcome = try apple.answerRetentionRequest(
            signedPayload: signedPayload, signers: signers,
            context: RequestContext(requestId: request.requestId, source: "retention"))
        requests.increment([outcome.answer.bundleId, Self.result(of: outcome.answer.answer)])
        service.logger.info(
            "retention",
            [
                "request.id": request.requestId, "requestIdentifier": outcome.answer.requestIdentifier,
                "originalTransactionId": outcome.answer.originalTransactionId, "answer": outcome.answer.answer.rawValue,
                "rule": outcome.answer.ruleIndex.map(String.init) ?? "none",
            ])
        return .json(200, outcome.responseBody)
    }
}
