/// Why the legacy verifyReceipt call gave no receipt.
public enum ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Apple answered with a final status (21003 not authenticated, 21004 shared secret, 21010 account gone, …).
    case rejected(status: Int)
    /// Apple could not be reached or kept failing (network, timeout, HTTP 5xx, retries exhausted): retry later.
    case unavailable(String)
    /// Apple's answer was not the JSON verifyReceipt documents.
    case malformedResponse(String)
    /// The text posted as a receipt cannot be one (not base64, not a PKCS#7 SignedData); found
    /// locally, so nothing was sent to Apple.
    case notAReceipt(String)

    public var description: String {
        switch self {
        case .rejected(let status): "receipt rejected by Apple with status \(status)"
        case .unavailable(let detail): "verifyReceipt unavailable: \(detail)"
        case .malformedResponse(let detail): "malformed verifyReceipt response: \(detail)"
        case .notAReceipt(let detail): detail
        }
    }
}
