import AppStore
import Foundation
import JSON
import Ledger

extension Configuration {
    /// Reads and validates a configuration file. Relative `trustedRoots` paths are resolved
    /// against the file's own directory, so a config can travel with its certificates.
    public static func load(path: String) throws(ConfigurationError) -> Configuration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(file: path, key: "", message: "cannot read the file")
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try parse(Array(data), file: path, baseDirectory: directory.isEmpty ? "." : directory)
    }

    public static func parse(_ bytes: [UInt8], file: String, baseDirectory: String) throws(ConfigurationError)
        -> Configuration
    {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw ConfigurationError(file: file, key: "", message: "bad JSON: \(error)")
        }
        let reader = ConfigurationReader(file: file, baseDirectory: baseDirectory)
        let top = try reader.object(root, at: "")
        try reader.allowOnly(
            ["apps", "trustedRoots", "verifyReceipt", "transferPolicy", "webhooks", "reconcile"], in: top, at: "")

        var configuration = Configuration.empty
        if let apps = top["apps"] {
            let list = try reader.array(apps, at: "apps")
            for (index, app) in list.enumerated() {
                configuration.apps.append(try reader.app(app, at: "apps[\(index)]"))
            }
            var seen = Set<String>()
            for (index, app) in configuration.apps.enumerated() where !seen.insert(app.bundleId).inserted {
                throw ConfigurationError(
                    file: file, key: "apps[\(index)].bundleId", message: "\(app.bundleId) is configured twice")
            }
        }
        if let roots = top["trustedRoots"] {
            for (index, entry) in try reader.array(roots, at: "trustedRoots").enumerated() {
                let key = "trustedRoots[\(index)]"
                let path = try reader.string(entry, at: key)
                let resolved = path.hasPrefix("/") ? path : baseDirectory + "/" + path
                guard let data = FileManager.default.contents(atPath: resolved), !data.isEmpty else {
                    throw ConfigurationError(file: file, key: key, message: "cannot read root certificate \(resolved)")
                }
                // Checked here, before serve starts anything, and named: a root that only failed
                // inside the verifier used to stop start-up after the cluster was up, file unnamed.
                guard let der = RootCertificateFile.der(from: Array(data)) else {
                    throw ConfigurationError(
                        file: file, key: key,
                        message: "\(resolved) is not an X.509 certificate (expected DER, or PEM \"BEGIN CERTIFICATE\")")
                }
                configuration.trustedRootsDER.append(der)
                configuration.trustedRootPaths.append(resolved)
            }
            if configuration.trustedRootsDER.isEmpty {
                throw ConfigurationError(file: file, key: "trustedRoots", message: "must name at least one root")
            }
        }
        if let verify = top["verifyReceipt"] {
            let members = try reader.object(verify, at: "verifyReceipt")
            try reader.allowOnly(
                ["production", "sandbox", "timeoutSeconds", "retries"], in: members, at: "verifyReceipt")
            if let url = members["production"] {
                configuration.verifyReceipt.production = try reader.url(url, at: "verifyReceipt.production")
            }
            if let url = members["sandbox"] {
                configuration.verifyReceipt.sandbox = try reader.url(url, at: "verifyReceipt.sandbox")
            }
            if let timeout = members["timeoutSeconds"] {
                guard let seconds = timeout.doubleValue, seconds > 0, seconds <= 120 else {
                    throw ConfigurationError(
                        file: file, key: "verifyReceipt.timeoutSeconds",
                        message: "expected a number of seconds in (0, 120]")
                }
                configuration.verifyReceipt.timeoutSeconds = seconds
            }
            if let retries = members["retries"] {
                guard let count = retries.int64Value, (0...10).contains(count) else {
                    throw ConfigurationError(
                        file: file, key: "verifyReceipt.retries", message: "expected an integer 0…10")
                }
                configuration.verifyReceipt.retries = Int(count)
            }
        }
        if let policy = top["transferPolicy"] {
            let word = try reader.string(policy, at: "transferPolicy")
            guard let parsed = TransferPolicy(rawValue: word) else {
                throw ConfigurationError(
                    file: file, key: "transferPolicy", message: "expected \"transfer\" or \"keep\", got \"\(word)\"")
            }
            configuration.transferPolicy = parsed
        }
        if let webhooks = top["webhooks"] {
            configuration.webhooks = try WebhookEndpoint.parseList(webhooks, file: file)
        }
        if let reconcile = top["reconcile"] {
            let members = try reader.object(reconcile, at: "reconcile")
            try reader.allowOnly(["intervalSeconds"], in: members, at: "reconcile")
            if let interval = members["intervalSeconds"] {
                guard let seconds = interval.doubleValue, seconds == 0 || (60...86_400).contains(seconds) else {
                    throw ConfigurationError(
                        file: file, key: "reconcile.intervalSeconds",
                        message: "expected 0 (off) or a number of seconds in 60…86400")
                }
                configuration.reconcileIntervalSeconds = seconds
            }
        }
        try configuration.refuseTestkitRootsOutsideLocalTesting(file: file)
        return configuration
    }
}

/// Type checks with messages that name the offending key.
package struct ConfigurationReader {
    package let file: String
    /// Where relative file names in the config (`privateKeyFile`) are found: the file's directory.
    package var baseDirectory = "."

    package func error(_ key: String, _ message: String) -> ConfigurationError {
        ConfigurationError(file: file, key: key, message: message)
    }

    package func object(_ value: JSONValue, at key: String) throws(ConfigurationError) -> [String: JSONValue] {
        guard let members = value.objectValue else { throw error(key, "expected an object") }
        return members
    }

    package func array(_ value: JSONValue, at key: String) throws(ConfigurationError) -> [JSONValue] {
        guard let items = value.arrayValue else { throw error(key, "expected an array") }
        return items
    }

    package func string(_ value: JSONValue, at key: String) throws(ConfigurationError) -> String {
        guard let text = value.stringValue else { throw error(key, "expected a string") }
        return text
    }

    package func url(_ value: JSONValue, at key: String) throws(ConfigurationError) -> String {
        let text = try string(value, at: key)
        // URL(string:) is what serve parses it with, after the cluster is up: refuse here what it would.
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let url = URL(string: text), url.host != nil
        else {
            throw error(key, "expected an http(s) URL, got \"\(text)\"")
        }
        return text
    }

    package func allowOnly(_ names: Set<String>, in members: [String: JSONValue], at key: String)
        throws(ConfigurationError)
    {
        for name in members.keys.sorted() where !names.contains(name) {
            let path = key.isEmpty ? name : "\(key).\(name)"
            throw error(path, "unknown key (expected one of: \(names.sorted().joined(separator: ", ")))")
        }
    }

    package func app(_ value: JSONValue, at key: String) throws(ConfigurationError) -> Configuration.App {
        let members = try object(value, at: key)
        try allowOnly(
            [
                "bundleId", "appAppleId", "environments", "sharedSecret", "products", "serverAPI", "consumption",
                "commission",
                "retention",
            ],
            in: members, at: key)
        guard let bundleValue = members["bundleId"] else { throw error("\(key).bundleId", "is required") }
        let bundleId = try string(bundleValue, at: "\(key).bundleId")
        guard !bundleId.isEmpty else { throw error("\(key).bundleId", "must not be empty") }
        var appAppleId: Int64?
        if let id = members["appAppleId"], !id.isNull {
            guard let number = id.int64Value, number > 0, case .number(let lexeme) = id, Int64(lexeme) != nil else {
                throw error("\(key).appAppleId", "expected a positive integer")
            }
            appAppleId = number
        }
        var environments = ["Production", "Sandbox"]
        if let list = members["environments"] {
            environments = []
            for (index, entry) in try array(list, at: "\(key).environments").enumerated() {
                let name = try string(entry, at: "\(key).environments[\(index)]")
                guard Configuration.knownEnvironments.contains(name) else {
                    throw error(
                        "\(key).environments[\(index)]",
                        "unknown environment \"\(name)\" (expected \(Configuration.knownEnvironments.sorted().joined(separator: ", ")))"
                    )
                }
                environments.append(name)
            }
            guard !environments.isEmpty else {
                throw error("\(key).environments", "must name at least one environment")
            }
        }
        if let mixed = Configuration.mixedEnvironments(environments) {
            throw error("\(key).environments", mixed)
        }
        if environments.contains("Production") && appAppleId == nil {
            // Apple's own verifier refuses Production without the app's Apple id.
            throw error("\(key).appAppleId", "is required when environments include Production")
        }
        var sharedSecret: String?
        if let secret = members["sharedSecret"], !secret.isNull {
            sharedSecret = try string(secret, at: "\(key).sharedSecret")
        }
        var products: [String: Configuration.Product] = [:]
        if let list = members["products"] {
            for (productId, entry) in try object(list, at: "\(key).products") {
                products[productId] = try product(entry, at: "\(key).products.\(productId)")
            }
        }
        var serverAPI: Configuration.ServerAPI?
        if let value = members["serverAPI"], !value.isNull {
            serverAPI = try self.serverAPI(value, at: "\(key).serverAPI", environments: environments)
        }
        var consumption: ConsumptionInfo.Settings?
        if let value = members["consumption"], !value.isNull {
            consumption = try self.consumption(value, at: "\(key).consumption")
            guard serverAPI != nil else {
                throw error(
                    "\(key).consumption",
                    "needs the app's serverAPI key: the answer goes to Apple's App Store Server API")
            }
        }
        var retention: RetentionRules?
        if let value = members["retention"], !value.isNull {
            retention = try self.retention(value, at: "\(key).retention", hasOfferKey: serverAPI != nil)
        }
        var commission = Configuration.Commission.standard
        if let value = members["commission"], !value.isNull {
            let word = try string(value, at: "\(key).commission")
            guard let program = Configuration.Commission(rawValue: word) else {
                let words = Configuration.Commission.allCases.map(\.rawValue).joined(separator: " or ")
                throw error("\(key).commission", "unknown commission program \"\(word)\" (expected \(words))")
            }
            commission = program
        }
        return .init(
            bundleId: bundleId, appAppleId: appAppleId, environments: environments, sharedSecret: sharedSecret,
            products: products, serverAPI: serverAPI, consumption: consumption, commission: commission,
            retention: retention)
    }

    /// `serverAPI`: the ids are required and the key is read and checked now, so a wrong file
    /// stops start-up naming it instead of every call to Apple failing with 401.
    package func serverAPI(_ value: JSONValue, at key: String, environments: [String]) throws(ConfigurationError)
        -> Configuration.ServerAPI
    {
        let members = try object(value, at: key)
        try allowOnly(["issuerId", "keyId", "privateKeyFile", "baseURLs"], in: members, at: key)
        func required(_ name: String, _ hint: String) throws(ConfigurationError) -> String {
            guard let entry = members[name] else { throw error("\(key).\(name)", "is required (\(hint))") }
            let text = try string(entry, at: "\(key).\(name)")
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw error("\(key).\(name)", "must not be empty (\(hint))")
            }
            return text
        }
        let issuerId = try required(
            "issuerId", "App Store Connect, Users and Access, Integrations, In-App Purchase: Issuer ID")
        let keyId = try required("keyId", "the Key ID shown beside the In-App Purchase key")
        let file = try required("privateKeyFile", "the SubscriptionKey_KEYID.p8 downloaded from App Store Connect")
        let resolved = file.hasPrefix("/") ? file : baseDirectory + "/" + file
        let signingKey: AppStoreServerKey
        do {
            signingKey = try AppStoreServerKey.load(issuerId: issuerId, keyId: keyId, path: resolved)
        } catch {
            throw self.error("\(key).privateKeyFile", "\(resolved): \(error.detail)")
        }
        let (production, sandbox, localTesting, searchOrder) = try serverAPIHosts(
            members["baseURLs"], at: key, environments: environments)
        return Configuration.ServerAPI(
            issuerId: issuerId, keyId: keyId, privateKeyPath: resolved, key: signingKey, productionURL: production,
            sandboxURL: sandbox, localTestingURL: localTesting, searchOrder: searchOrder)
    }
}
