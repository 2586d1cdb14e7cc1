import HTTP
import JSON

/// The single mapping from typed errors to problem+json responses with stable `code` words, and
/// the one place that logs what an operator must see of them. Every route answers its errors
/// through `respond` (or `answer`, outside a handler body): API, admin, operations, Apple API,
/// grants, webhooks, analytics; no route builds a problem from a `ServiceError` itself.
package enum ErrorMapping {
    /// A handler body's answer, or its typed error as problem+json (logged by `answer`).
    package static func respond(
        _ logger: Logger, _ request: HTTPRequest, _ body: () throws(ServiceError) -> HTTPResponse
    ) -> HTTPResponse {
        do {
            return try body()
        } catch {
            return answer(error, requestId: request.requestId, logger: logger)
        }
    }

    /// The problem for `error`. What the client cannot act on alone goes to the log with the
    /// request id (which the problem carries too, so a report leads to the line): a bug or an
    /// unexpected database error (500) at error level; a conflict that outlived the retries
    /// (409) and an unreachable database (503) as warnings.
    package static func answer(_ error: ServiceError, requestId: String, logger: Logger) -> HTTPResponse {
        switch error {
        case .internalError(let detail):
            logger.error("request failed", ["request.id": requestId, "error": detail])
        case .conflict(let detail):
            logger.warning("request conflicted", ["request.id": requestId, "error": detail])
        case .storeUnavailable(let detail):
            logger.warning("database unavailable", ["request.id": requestId, "error": detail])
        default:
            break
        }
        return problem(for: error, requestId: requestId)
    }

    private static func problem(for error: ServiceError, requestId: String) -> HTTPResponse {
        var extra: [String: JSONValue] = ["requestId": .string(requestId)]
        var headers: [String: String] = [:]
        let status: Int
        let code: String
        let title: String
        let detail: String
        switch error {
        case .invalidRequest(let message):
            (status, code, title, detail) = (400, "invalid_request", "Invalid request", message)
        case .verificationFailed(let failure):
            (status, code, title, detail) = (422, "verification_failed", "Verification failed", failure.detail)
            extra["reason"] = .string(failure.reason.rawValue)
        case .receiptRejected(let appleStatus, let message):
            (status, code, title, detail) = (422, "verification_failed", "Verification failed", message)
            extra["reason"] = "receipt_rejected"
            extra["appleStatus"] = .int(Int64(appleStatus))
        case .appleUnavailable(let message):
            (status, code, title, detail) = (502, "apple_unavailable", "Apple unavailable", message)
            headers["Retry-After"] = "5"
        case .appleRejected(_, let appleErrorCode, let message):
            (status, code, title, detail) = (422, "apple_rejected", "Apple rejected the request", message)
            extra["appleErrorCode"] = appleErrorCode.map { .int($0) } ?? .null
        case .storeUnavailable:
            (status, code, title, detail) = (
                503, "store_unavailable", "Store unavailable",
                "the database is unreachable or did not answer in time; nothing was recorded, retry later"
            )
            headers["Retry-After"] = "1"
        case .rejected(let rejection):
            switch rejection {
            case .ownedByOtherUser:
                (status, code, title, detail) = (
                    409, "owned_by_other_user", "Owned by another user",
                    "this purchase belongs to another user and transferPolicy is keep"
                )
            case .insufficientBalance(let balance):
                (status, code, title, detail) = (
                    409, "insufficient_balance", "Insufficient balance",
                    "the balance is \(balance)"
                )
                extra["balance"] = .int(balance)
            case .idempotencyKeyReused(let currency, let amount):
                (status, code, title, detail) = (
                    422, "idempotency_key_reused", "Idempotency key reused",
                    "this idempotencyKey was used for a debit of \(amount) \(currency); "
                        + "nothing changed (use a new key for a new debit)"
                )
                extra["firstDebit"] = .object(["currency": .string(currency), "amount": .int(amount)])
            case .invalidAmount(let amount):
                (status, code, title, detail) = (
                    400, "invalid_request", "Invalid request",
                    "amount must be a positive integer, got \(amount)"
                )
            case .grantIdempotencyKeyReused(let grantId):
                (status, code, title, detail) = (
                    422, "idempotency_key_reused", "Idempotency key reused",
                    "this idempotency key made grant \(grantId) with another entitlement, "
                        + "duration/until or reason; nothing changed (use a new key)"
                )
                extra["grantId"] = .string(grantId)
            case .appAccountTokenTaken:
                // The other user is not named: a token must not reveal whose it is.
                (status, code, title, detail) = (
                    409, "app_account_token_taken", "App account token taken",
                    "this appAccountToken is registered to another user; nothing changed"
                )
            case .unknownGrant(let grantId):
                (status, code, title, detail) = (
                    404, "not_found", "Not found",
                    "this user has no grant \(grantId)"
                )
            case .grantEndsInPast:
                (status, code, title, detail) = (
                    400, "invalid_request", "Invalid request",
                    "the grant would end before it starts: until must be in the future"
                )
                extra["field"] = .string("until")
            case .aliasConflict(_, let reason):
                (status, code, title, detail) = (409, "alias_conflict", "Alias conflict", reason + "; nothing changed")
            case .aliasOfItself:
                (status, code, title, detail) = (
                    400, "invalid_request", "Invalid request",
                    "a user cannot be its own alias: alias must differ from userId"
                )
                extra["field"] = .string("alias")
            }
        case .notFound(let message):
            (status, code, title, detail) = (404, "not_found", "Not found", message)
        case .busy(let message):
            (status, code, title, detail) = (409, "replay_in_progress", "Replay in progress", message)
        case .serverAPINotConfigured(let message):
            (status, code, title, detail) = (422, "server_api_not_configured", "Server API not configured", message)
        case .erasureNeedsLogMigration(let message):
            (status, code, title, detail) = (
                409, "erasure_needs_log_migration", "Erasure needs the log migration", message
            )
        case .notAutoRenewable(let message):
            (status, code, title, detail) = (422, "not_auto_renewable", "Not an auto-renewable subscription", message)
        case .unknownApp(let message):
            (status, code, title, detail) = (422, "unknown_app", "Unknown app", message)
        case .wrongEnvironment(let message):
            (status, code, title, detail) = (422, "wrong_environment", "Environment not accepted", message)
        case .projectionVersionAhead(let ahead):
            // Another instance serves it with the newer rules (HAProxy stops sending here: /readyz).
            (status, code, title, detail) = (
                503, "projection_version_ahead", "Projection version ahead", ahead.description
            )
            extra["projection"] = .string(ahead.projection)
            extra["databaseVersion"] = .int(Int64(ahead.database))
            extra["codeVersion"] = .int(Int64(ahead.code))
            headers["Retry-After"] = "5"
        case .conflict:
            // Concurrent writers to the same streams kept winning over every retry of the unit of
            // work (LedgerService.attemptLimit): nothing was recorded, and trying again is right.
            (status, code, title, detail) = (
                409, "conflict", "Conflict",
                "concurrent changes to the same data kept this request from completing; "
                    + "nothing was recorded, retry it"
            )
            headers["Retry-After"] = "1"
        case .internalError:
            (status, code, title, detail) = (
                500, "internal_error", "Internal error",
                "an unexpected error occurred; see the service log for request \(requestId)"
            )
        }
        var response = HTTPResponse.problem(status: status, code: code, title: title, detail: detail, extra: extra)
        for (name, value) in headers { response.headers[name] = value }
        return response
    }
}
