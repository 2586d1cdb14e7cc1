import AppStore
import HTTP
import JSON

/// `POST /v1/apple/retention-message` (docs/api.md §8): Apple's Retention Messaging calls it
/// with `{"signedPayload"}` (Apple's `RealtimeRequestBody`) and shows what it answers (Apple's
/// `RealtimeResponseBody`). No API key, as `POST /v1/notifications/apple`: only a payload Apple
/// signed for a configured app gets in.
struct RetentionRoutes: Sendable {
    let service: LedgerService
    let signers: OfferRoutes.SignerLookup

    func register(on router: inout Router) {
        router.add("POST", "/v1/apple/retention-message") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in try answer(request) }
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
        let outcome = try service.answerRetentionRequest(
            signedPayload: signedPayload, signers: signers,
            context: RequestContext(requestId: request.requestId, source: "retention"))
        service.logger.info("retention", [
            "request.id": request.requestId, "requestIdentifier": outcome.answer.requestIdentifier,
            "originalTransactionId": outcome.answer.originalTransactionId, "answer": outcome.answer.answer.rawValue,
            "rule": outcome.answer.ruleIndex.map(String.init) ?? "none",
        ])
        return .json(200, outcome.responseBody)
    }
}
