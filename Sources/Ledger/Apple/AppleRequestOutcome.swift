/// How Apple's App Store Server API answered a request the service made on its own initiative
/// (an answer to a CONSUMPTION_REQUEST, a renewal date extension). Recorded with the request,
/// so support and a replay see what was asked and what came of it.
public enum AppleRequestOutcome: String, Sendable, Hashable, CaseIterable {
    /// Apple took it (2xx; for an extension, `success: true`).
    case accepted
    /// Apple answered but did not do it (an extension answered `success: false`).
    case refused
    /// Apple answered 4xx: the request is wrong and sending it again will not help.
    case rejected
    /// Apple could not be reached, or kept answering 5xx / 429, within the client's bounded retries.
    case unavailable
}
