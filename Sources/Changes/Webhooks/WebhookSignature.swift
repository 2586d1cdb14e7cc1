import AppStore
import Foundation
import Infrastructure

/// The Standard Webhooks signature (api.md §4): `v1,` + base64(HMAC-SHA256(key, "id.timestamp.body")),
/// the key being the base64-decoded part of the secret after `whsec_`. Any Standard Webhooks
/// library verifies it with the same secret.
package enum WebhookSignature {
    package static func sign(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return "v1," + Data(HMACSHA256.authenticate(key: key, message: message)).base64EncodedString()
    }

    /// The three headers of one attempt at `timestamp` (Unix seconds).
    package static func headers(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> [String: String] {
        [
            "webhook-id": id,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": sign(key: key, id: id, timestamp: timestamp, body: body),
        ]
    }
}
