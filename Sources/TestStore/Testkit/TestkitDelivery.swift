import AppStore
import Foundation
import JSON

/// `testkit apple` sending a notification as Apple's App Store Server Notifications do: one POST
/// of `{"signedPayload"}` to the notification URL (App Store Connect's setting; here the running
/// service's `/v1/notifications/apple`), reported as one of Apple's `sendAttempts`.
enum TestkitDelivery {
    /// Apple gives an endpoint a few seconds, not the CLI's 30.
    static let timeoutSeconds = 10.0

    /// Posts `signedPayload` to `url` and says how it went, in Apple's words: SUCCESS for a 2xx,
    /// UNSUCCESSFUL_HTTP_RESPONSE_CODE for another status, TIMED_OUT, or NO_RESPONSE when nothing
    /// answered (nothing listens there: the URL is wrong or the service is down).
    static func send(_ signedPayload: String, to url: URL, now: () -> Int64) -> (attempt: SendAttempt, detail: String) {
        let attemptDate = now()
        let body = JSONValue.object(["signedPayload": .string(signedPayload)]).serialized()
        do {
            let answer = try TestkitPoster.post(body, to: url, key: nil, timeout: timeoutSeconds)
            let result = (200..<300).contains(answer.status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            return (
                SendAttempt(attemptDate: attemptDate, sendAttemptResult: result), "HTTP \(answer.status) \(answer.body)"
            )
        } catch {
            let timedOut = error.description.contains("did not answer") || error.description.contains("timed out")
            return (
                SendAttempt(attemptDate: attemptDate, sendAttemptResult: timedOut ? "TIMED_OUT" : "NO_RESPONSE"),
                error.description
            )
        }
    }
}
