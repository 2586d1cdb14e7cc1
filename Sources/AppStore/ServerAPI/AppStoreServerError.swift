/// How a Server API call failed, typed so the Service can answer without reading text:
/// `unavailable` → 502 `apple_unavailable` (retryable), `rejected` → 422 `apple_rejected` with
/// `appleErrorCode`, `malformedResponse` → Apple answered something that is not its format.
public enum AppStoreServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Apple could not be reached or kept failing (network, timeouts, 5xx, 429) after the bounded retries.
    case unavailable(String)
    /// Apple refused the request: its HTTP status and, when its body had them, `errorCode` and
    /// `errorMessage` (a 401 carries none: the token was refused).
    case rejected(status: Int, errorCode: Int64?, errorMessage: String?)
    /// A 2xx whose body is not what Apple documents (not JSON, a field missing or mistyped).
    case malformedResponse(String)
    /// Refused before anything was sent (an id that cannot be a path segment, a bad argument).
    case invalidArgument(String)

    /// Apple's "transaction id not found": the id may live in the other environment.
    public static let transactionIdNotFound: Int64 = 4_040_010
    /// Apple's error codes that say "try again" (its `…Retryable` errors).
    public static let retryableErrorCodes: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]

    /// Apple's `errorCode`, for the API's `appleErrorCode`.
    public var appleErrorCode: Int64? {
        if case .rejected(_, let code, _) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .unavailable(let detail): "App Store Server API unavailable: \(detail)"
        case .rejected(let status, let code, let message):
            "App Store Server API refused the request: HTTP \(status)"
                + (code.map { ", errorCode \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
        case .malformedResponse(let detail): "App Store Server API answered malformed data: \(detail)"
        case .invalidArgument(let detail): "not sent to the App Store Server API: \(detail)"
        }
    }
}
