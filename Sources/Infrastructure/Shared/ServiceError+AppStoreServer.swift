import AppStore

extension ServiceError {
    /// How a Server API failure reaches the API (docs/api.md §5): Apple down or failing after the
    /// client's bounded retries → 502 `apple_unavailable`; Apple's 4xx → 422 `apple_rejected`
    /// with `appleErrorCode`; an answer not in Apple's format is Apple's fault, not the caller's,
    /// so it is `apple_unavailable` too (nothing from it is recorded); an argument the client
    /// refused to send is the caller's `invalid_request`.
    public static func appStoreServer(_ error: AppStoreServerError) -> ServiceError {
        switch error {
        case .unavailable(let detail): .appleUnavailable(detail)
        case .malformedResponse(let detail): .appleUnavailable("Apple answered something unreadable: \(detail)")
        case .rejected(let status, let code, _):
            .appleRejected(status: status, appleErrorCode: code, detail: error.description)
        case .invalidArgument(let detail): .invalidRequest(detail)
        }
    }
}
