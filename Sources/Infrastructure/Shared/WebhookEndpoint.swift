import Foundation
import JSON
import Ledger

/// One configured webhook receiver (api.md §4, config key `webhooks`): where the changes go, the
/// secret they are signed with, which of them it wants, and how it is retried.
public struct WebhookEndpoint: Sendable, Equatable {
    public var name: String
    public var url: String
    /// The secret as configured (`whsec_<base64>`); `key` is what signs.
    public var secret: String
    /// The HMAC key: the base64-decoded part after `whsec_`.
    public var key: [UInt8]
    /// nil: every environment. A change with no environment (a debit, a grant) goes to every
    /// endpoint whatever this says.
    public var environments: Set<String>?
    /// nil: every type.
    public var types: Set<String>?
    public var timeoutSeconds: Double
    /// Seconds to wait after the 1st, 2nd, … failed attempt; after the last one the delivery is dead.
    public var retrySchedule: [Double]

    public static let defaultTimeoutSeconds: Double = 10
    public static let defaultRetrySchedule: [Double] = [5, 30, 120, 600, 3600, 21600]
    /// Standard Webhooks asks for 24–64 random bytes; fewer than 16 is a guessable key.
    package static let minimumKeyBytes = 16

    public init(
        name: String, url: String, secret: String, environments: Set<String>? = nil, types: Set<String>? = nil,
        timeoutSeconds: Double = defaultTimeoutSeconds, retrySchedule: [Double] = defaultRetrySchedule
    ) {
        self.name = name
        self.url = url
        self.secret = secret
        self.key = Self.key(ofSecret: secret) ?? []
        self.environments = environments
        self.types = types
        self.timeoutSeconds = timeoutSeconds
        self.retrySchedule = retrySchedule
    }

    /// Whether a change of `type` in `environment` goes to this endpoint.
    package func accepts(type: String, environment: String?) -> Bool {
        if let types, !types.contains(type) { return false }
        if let environment, let environments, !environments.contains(environment) { return false }
        return true
    }

    /// The key a `whsec_<base64>` secret names, or nil when it is not one.
    package static func key(ofSecret secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_") else { return nil }
        guard let data = Data(base64Encoded: String(secret.dropFirst(6))) else { return nil }
        return Array(data)
    }

    /// What `parseList` checks that endpoints built in code could still get wrong (`serve` runs
    /// it before anything starts).
    package static func validate(_ endpoints: [WebhookEndpoint]) throws(ConfigurationError) {
        var names = Set<String>()
        for (index, endpoint) in endpoints.enumerated() {
            func fail(_ key: String, _ message: String) -> ConfigurationError {
                ConfigurationError(file: "configuration", key: "webhooks[\(index)].\(key)", message: message)
            }
            guard !endpoint.name.isEmpty, names.insert(endpoint.name).inserted else {
                throw fail("name", "must be non-empty and unique")
            }
            guard endpoint.url.hasPrefix("http://") || endpoint.url.hasPrefix("https://"),
                URL(string: endpoint.url)?.host?.isEmpty == false
            else { throw fail("url", "expected an http(s) URL with a host") }
            guard endpoint.key.count >= minimumKeyBytes else {
                throw fail("secret", "expected \"whsec_\" and the base64 of at least \(minimumKeyBytes) bytes")
            }
            guard endpoint.timeoutSeconds > 0 else { throw fail("timeoutSeconds", "must be positive") }
            guard !endpoint.retrySchedule.isEmpty, endpoint.retrySchedule.allSatisfy({ $0 > 0 }) else {
                throw fail("retrySchedule", "must name at least one positive delay")
            }
        }
    }

    /// Parses the top-level `webhooks` array; every mistake names its key and the file.
    package static func parseList(_ value: JSONValue, file: String) throws(ConfigurationError) -> [WebhookEndpoint] {
        func fail(_ key: String, _ message: String) -> ConfigurationError {
            ConfigurationError(file: file, key: key, message: message)
        }
        guard let list = value.arrayValue else { throw fail("webhooks", "expected an array") }
        var endpoints: [WebhookEndpoint] = []
        var names = Set<String>()
        for (index, entry) in list.enumerated() {
            let at = "webhooks[\(index)]"
            guard let members = entry.objectValue else { throw fail(at, "expected an object") }
            let known: Set<String> = [
                "name", "url", "secret", "environments", "types", "timeoutSeconds", "retrySchedule",
            ]
            for name in members.keys.sorted() where !known.contains(name) {
                throw fail("\(at).\(name)", "unknown key (expected one of: \(known.sorted().joined(separator: ", ")))")
            }
            guard let name = members["name"]?.stringValue else { throw fail("\(at).name", "is required (a string)") }
            guard !name.isEmpty else { throw fail("\(at).name", "must not be empty") }
            // It is a path segment of the admin API and a metrics label: keep it plain.
            guard
                name.utf8.allSatisfy({
                    $0 < 0x80 && ($0 == 0x2D || $0 == 0x5F || $0 == 0x2E || isalnum(Int32($0)) != 0)
                })
            else { throw fail("\(at).name", "use letters, digits, '-', '_' or '.' only, got \"\(name)\"") }
            guard names.insert(name).inserted else { throw fail("\(at).name", "\(name) is configured twice") }
            guard let url = members["url"]?.stringValue else { throw fail("\(at).url", "is required (a string)") }
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), let parsed = URL(string: url),
                let host = parsed.host, !host.isEmpty
            else { throw fail("\(at).url", "expected an http(s) URL with a host, got \"\(url)\"") }
            guard let secretValue = members["secret"], !secretValue.isNull else {
                throw fail(
                    "\(at).secret",
                    "is required (\"whsec_\" and the base64 of at least \(minimumKeyBytes) random bytes)")
            }
            guard let secret = secretValue.stringValue, !secret.isEmpty else {
                throw fail("\(at).secret", "must be a non-empty string \"whsec_<base64>\"")
            }
            guard secret.hasPrefix("whsec_") else { throw fail("\(at).secret", "must start with \"whsec_\"") }
            // The secret itself never goes into a message.
            guard let key = key(ofSecret: secret) else {
                throw fail("\(at).secret", "the part after \"whsec_\" is not base64")
            }
            guard key.count >= minimumKeyBytes else {
                throw fail(
                    "\(at).secret", "decodes to \(key.count) bytes; use at least \(minimumKeyBytes) random bytes")
            }
            var endpoint = WebhookEndpoint(name: name, url: url, secret: secret)
            if let value = members["environments"], !value.isNull {
                guard let items = value.arrayValue else { throw fail("\(at).environments", "expected an array") }
                var set = Set<String>()
                for (i, item) in items.enumerated() {
                    guard let word = item.stringValue, Configuration.knownEnvironments.contains(word) else {
                        throw fail(
                            "\(at).environments[\(i)]",
                            "unknown environment (expected \(Configuration.knownEnvironments.sorted().joined(separator: ", ")))"
                        )
                    }
                    set.insert(word)
                }
                guard !set.isEmpty else {
                    throw fail("\(at).environments", "must name at least one environment, or be left out for all")
                }
                endpoint.environments = set
            }
            if let value = members["types"], !value.isNull {
                guard let items = value.arrayValue else { throw fail("\(at).types", "expected an array or null") }
                var set = Set<String>()
                for (i, item) in items.enumerated() {
                    guard let word = item.stringValue, ChangeType(rawValue: word) != nil else {
                        throw fail(
                            "\(at).types[\(i)]",
                            "unknown change type (expected one of: \(ChangeType.allCases.map(\.rawValue).joined(separator: ", ")))"
                        )
                    }
                    set.insert(word)
                }
                guard !set.isEmpty else { throw fail("\(at).types", "must name at least one type, or be null for all") }
                endpoint.types = set
            }
            if let value = members["timeoutSeconds"] {
                guard let seconds = value.doubleValue, seconds > 0, seconds <= 300 else {
                    throw fail("\(at).timeoutSeconds", "expected a number of seconds in (0, 300]")
                }
                endpoint.timeoutSeconds = seconds
            }
            if let value = members["retrySchedule"] {
                guard let items = value.arrayValue else {
                    throw fail("\(at).retrySchedule", "expected an array of seconds")
                }
                guard !items.isEmpty else {
                    throw fail("\(at).retrySchedule", "must name at least one delay (seconds before each retry)")
                }
                var delays: [Double] = []
                for (i, item) in items.enumerated() {
                    guard let seconds = item.doubleValue, seconds > 0, seconds <= 7 * 86400 else {
                        throw fail(
                            "\(at).retrySchedule[\(i)]", "expected a positive number of seconds (at most 7 days)")
                    }
                    delays.append(seconds)
                }
                endpoint.retrySchedule = delays
            }
            endpoint.key = key
            endpoints.append(endpoint)
        }
        return endpoints
    }
}
