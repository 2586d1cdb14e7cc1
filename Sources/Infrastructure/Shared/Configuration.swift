import JSON
import Ledger

/// The service's configuration file (docs/api.md §1), validated at start so that a mistake stops
/// start-up with a message naming the file and the key instead of failing on the first request.
public struct Configuration: Sendable {
    public enum TransferPolicy: String, Sendable { case transfer, keep }

    public struct App: Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public var sharedSecret: String?
        public var products: [String: Product]
        /// Apple's App Store Server API for this app (docs/api.md §5); nil: not configured.
        public var serverAPI: ServerAPI? = nil
        /// How to answer Apple's CONSUMPTION_REQUEST (docs/api.md §5); nil: send nothing.
        public var consumption: ConsumptionInfo.Settings? = nil
        /// Apple's commission program for the proceeds estimate (api.md §1, §3.1).
        public var commission: Commission = .standard
        /// How to answer Apple's Retention Messaging requests (docs/api.md §8); nil: the empty answer.
        public var retention: RetentionRules? = nil
    }

    /// Apple's commission programs: `standard` (30 %, 15 % for a subscription's periods after its
    /// first paid year) or `small-business` (15 % everywhere). The rates themselves live in one
    /// place, `analytics.revenue_movements` (migration 0037).
    public enum Commission: String, Sendable, CaseIterable {
        case standard
        case smallBusiness = "small-business"
    }

    public struct Product: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable {
            case consumable
            case nonConsumable = "non-consumable"
            case subscription
            case nonRenewing = "non-renewing"
        }
        public var kind: Kind
        public var entitlements: [String]
        public var grants: [String: Int64]
        /// Non-renewing only: an ISO 8601 duration (`P1M`); nil grants until revoked.
        public var duration: String?
        /// Subscription only: its billing period (`P1W` … `P1Y`, api.md §1), which MRR
        /// normalises by; nil: the transaction's length snapped to the nearest standard one.
        public var period: BillingPeriod?
        /// Subscription only: its subscription group (api.md §1, §8), for offer eligibility.
        public var group: String? = nil

        public init(
            kind: Kind, entitlements: [String], grants: [String: Int64], duration: String? = nil,
            period: BillingPeriod? = nil, group: String? = nil
        ) {
            self.group = group
            self.kind = kind
            self.entitlements = entitlements
            self.grants = grants
            self.duration = duration
            self.period = period
        }
    }

    public struct VerifyReceipt: Sendable {
        public var production: String
        public var sandbox: String
        public var timeoutSeconds: Double
        public var retries: Int
    }

    public var apps: [App]
    /// DER bytes of each trusted root; empty means the bundled Apple Root CA - G3.
    public var trustedRootsDER: [[UInt8]]
    public var trustedRootPaths: [String]
    public var verifyReceipt: VerifyReceipt
    public var transferPolicy: TransferPolicy
    /// Receivers of the change feed (api.md §4); none by default.
    public var webhooks: [WebhookEndpoint] = []
    /// How often the background reconciler asks Apple's notification history for what never
    /// arrived (api.md §5; config `reconcile.intervalSeconds`, 0 = off). It runs only for apps
    /// with a `serverAPI` key.
    public var reconcileIntervalSeconds: Double = 3600

    public static let defaultVerifyReceipt = VerifyReceipt(
        production: "https://buy.itunes.apple.com/verifyReceipt",
        sandbox: "https://sandbox.itunes.apple.com/verifyReceipt",
        timeoutSeconds: 15, retries: 3)

    public static let empty = Configuration(
        apps: [], trustedRootsDER: [], trustedRootPaths: [], verifyReceipt: defaultVerifyReceipt,
        transferPolicy: .transfer)

    public static let knownEnvironments: Set<String> = ["Production", "Sandbox", "Xcode", "LocalTesting"]

    /// Why an app's environments cannot go together, or nil. Apple's verifier checks no
    /// signature for Xcode and LocalTesting data (local StoreKit testing); it is built for one
    /// environment and never meets a mix, but an app here that accepted Production or Sandbox
    /// beside them would let anyone mint a paying customer with a self-signed transaction.
    public static func mixedEnvironments(_ environments: [String]) -> String? {
        let store = environments.filter { $0 == "Production" || $0 == "Sandbox" }
        let local = environments.filter { $0 == "Xcode" || $0 == "LocalTesting" }
        guard !store.isEmpty, !local.isEmpty else { return nil }
        return "\(store.joined(separator: "/")) cannot be mixed with \(local.joined(separator: "/")) in one app: "
            + "Apple checks no signature for local StoreKit testing, so anyone could mint such payloads; "
            + "put local-testing apps in a config of their own"
    }

    /// Checks what `parse` checks but a configuration built in code could get wrong; `serve`
    /// runs it before anything starts.
    public func validate() throws(ConfigurationError) {
        for (index, app) in apps.enumerated() {
            if let mixed = Self.mixedEnvironments(app.environments) {
                throw ConfigurationError(file: "configuration", key: "apps[\(index)].environments", message: mixed)
            }
        }
        try WebhookEndpoint.validate(webhooks)
    }

    /// What start-up should warn about: non-renewing products with no duration are granted
    /// until revoked, which is rarely what an app that sells them for a time means.
    public var warnings: [String] {
        var lines: [String] = []
        for app in apps {
            for (productId, product) in app.products.sorted(by: { $0.key < $1.key })
            where product.kind == .nonRenewing && product.duration == nil {
                lines.append(
                    "\(app.bundleId): non-renewing product \(productId) has no duration: granted until revoked")
            }
        }
        return lines
    }
}

/// A configuration mistake, always naming the file and the key at fault.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var key: String
    public var message: String

    public var description: String {
        key.isEmpty ? "\(file): \(message)" : "\(file): \(key): \(message)"
    }
}
