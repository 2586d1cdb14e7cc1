import AppStore
import Foundation
import Glibc
import JSON
import SystemCalls

/// The test store's files under `<data-dir>/testkit/`: the CA (only the leaf's key is kept,
/// mode 0600), a config trusting the CA for one LocalTesting app, and the state of what was minted.
struct TestkitStore {
    let dataDirectory: String
    /// Reads config.json as the service does (`TestkitCommand.run`'s loader); nil for a store
    /// only asked for its state.
    var loadConfiguration: TestkitConfiguration.Loader? = nil

    static let bundleId = "com.example.game"
    static let subscription = "com.example.game.pro.monthly"
    static let coins = "com.example.game.coins100"
    static let removeAds = "com.example.game.removeads"

    var directory: String { dataDirectory + "/testkit" }
    var configPath: String { directory + "/config.json" }
    var statePath: String { directory + "/state.json" }
    var rootDERPath: String { directory + "/ca-root.der" }
    var rootPEMPath: String { directory + "/ca-root.pem" }
    var intermediatePath: String { directory + "/ca-intermediate.der" }
    var leafPath: String { directory + "/ca-leaf.der" }
    var leafKeyPath: String { directory + "/ca-leaf.key" }
    /// The store's In-App Purchase key, named as App Store Connect names its downloads.
    static func serverAPIKeyFile(_ keyId: String) -> String { "SubscriptionKey_\(keyId).p8" }

    var exists: Bool { FileManager.default.fileExists(atPath: configPath) }

    /// The port of the stand-in for Apple (`testkit apple`) unless `init --apple-port` says otherwise.
    static let defaultApplePort = 8089

    /// The store's In-App Purchase key as App Store Connect shows it beside the `.p8`.
    struct ServerAPIKey {
        var issuerId: String
        var keyId: String
    }

    /// The retention rules init writes, so `testkit retention-message` gets each kind of answer:
    /// German speakers a promotional offer, French speakers a message, others the empty answer
    /// (Apple's default message). The message id stands for one made in App Store Connect.
    static let retentionOffer = "stay50"
    static let retentionMessage = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

    /// The config `testkit init` writes. `trustedRoots` and the key file are relative to the file:
    /// the store can move. verifyReceipt (both URLs) and the Server API (LocalTesting) are the
    /// store's stand-in, and the app's shared secret and key are its own.
    static func configText(applePort: Int, sharedSecret: String, key: ServerAPIKey) -> String {
        """
        {
          "apps": [{
            "bundleId": "\(bundleId)",
            "environments": ["LocalTesting"],
            "sharedSecret": "\(sharedSecret)",
            "products": {
              "\(subscription)": {"type": "subscription", "entitlements": ["pro"]},
              "\(coins)": {"type": "consumable", "grants": {"coins": 100}},
              "\(removeAds)": {"type": "non-consumable", "entitlements": ["no_ads"]}
            },
            "serverAPI": {"issuerId": "\(key.issuerId)", "keyId": "\(key.keyId)",
                          "privateKeyFile": "\(serverAPIKeyFile(key.keyId))",
                          "baseURLs": {"LocalTesting": "http://127.0.0.1:\(applePort)"}},
            "retention": {"rules": [
              {"locale": "de", "promotionalOffer": {"offerId": "\(retentionOffer)", "messageId": "\(retentionMessage)"}},
              {"locale": "fr", "message": "\(retentionMessage)"}
            ]}
          }],
          "trustedRoots": ["ca-root.der"],
          "verifyReceipt": {"production": "http://127.0.0.1:\(applePort)/verifyReceipt",
                            "sandbox": "http://127.0.0.1:\(applePort)/verifyReceipt"}
        }

        """
    }

    /// 32 hex digits, like the shared secrets App Store Connect hands out.
    static func newSharedSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return String(byte >> 4, radix: 16) + String(byte & 0x0F, radix: 16)
        }.joined()
    }

    /// Ids shaped as App Store Connect's: a UUID issuer and a 10-character key id.
    static func newServerAPIKey() -> ServerAPIKey {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let keyId = String((0..<10).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        return ServerAPIKey(issuerId: UUID().uuidString.lowercased(), keyId: keyId)
    }

    /// Creates the CA, the config and an empty state. Refuses to overwrite: a running service
    /// trusts the existing root, and the state names the chains it has seen.
    func create(now: Int64, applePort: Int = defaultApplePort) throws {
        // 0755 like serve's own data directory: when run as root, the `postgres` user must enter it.
        for path in [dataDirectory, directory] {
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            } catch {
                throw TestkitError("cannot create \(path): \(error.localizedDescription)")
            }
        }
        let authority = try TestCertificateAuthority.generate(now: now / 1000)
        guard let rootPEM = TestCertificateAuthority.pem(certificateDER: authority.rootDER) else {
            throw TestkitError("cannot write the test CA as PEM")
        }
        try write(Array(authority.leafKeyPEM.utf8), to: leafKeyPath, mode: 0o600)
        try write(authority.rootDER, to: rootDERPath, mode: 0o644)
        try write(Array(rootPEM.utf8), to: rootPEMPath, mode: 0o644)
        try write(authority.intermediateDER, to: intermediatePath, mode: 0o644)
        try write(authority.leafDER, to: leafPath, mode: 0o644)
        let key = Self.newServerAPIKey()
        try write(
            Array(try TestCertificateAuthority.generateKeyPEM().utf8),
            to: directory + "/" + Self.serverAPIKeyFile(key.keyId), mode: 0o600)
        try save(TestkitState())
        // The config last: its presence is what says the store is complete.
        // 0600: the shared secret is the app's.
        let text = Self.configText(applePort: applePort, sharedSecret: Self.newSharedSecret(), key: key)
        try write(Array(text.utf8), to: configPath, mode: 0o600)
        _ = try configuration()
    }

    private func requireStore() throws(TestkitError) {
        guard exists else {
            throw TestkitError(
                "no test store in \(directory): run `iap-ledger testkit init --data-dir \(dataDirectory)` first")
        }
    }

    func authority() throws -> TestCertificateAuthority {
        try requireStore()
        let key = try read(leafKeyPath)
        return TestCertificateAuthority(
            rootDER: try read(rootDERPath), intermediateDER: try read(intermediatePath), leafDER: try read(leafPath),
            leafKeyPEM: String(decoding: key, as: UTF8.self))
    }

    func configuration() throws -> TestkitConfiguration {
        try requireStore()
        guard let loadConfiguration else { throw TestkitError("no configuration loader for \(configPath)") }
        return try loadConfiguration(configPath)
    }

    /// The app the store mints for: the config's LocalTesting app.
    func app() throws -> TestkitConfiguration.App {
        guard
            let app = try configuration().apps.first(where: {
                $0.environments.contains(AppStoreEnvironment.localTesting)
            })
        else { throw TestkitError("\(configPath) has no app accepting LocalTesting") }
        return app
    }

    /// Runs `body` holding an exclusive lock on the state, so two testkit commands at once never
    /// mint the same transaction id or lose each other's chain.
    func withStateLock<T>(_ body: () throws -> T) throws -> T {
        try requireStore()
        let fd = open(directory + "/state.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestkitError("cannot open \(directory)/state.lock: \(SystemCallError.last)") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw TestkitError("cannot lock \(directory)/state.lock") }
        return try body()
    }

    func loadState() throws -> TestkitState {
        try requireStore()
        let bytes = try read(statePath)
        guard let json = try? JSONValue.parse(bytes), let state = TestkitState(json: json) else {
            throw TestkitError("\(statePath) is not a testkit state file")
        }
        return state
    }

    /// Written to a temporary file and renamed, so an interrupted command never leaves half a state.
    func save(_ state: TestkitState) throws {
        let temporary = statePath + ".tmp"
        try write(state.json().serialized(sortedKeys: true) + [0x0A], to: temporary, mode: 0o644)
        guard rename(temporary, statePath) == 0 else {
            throw TestkitError("cannot write \(statePath): \(SystemCallError.last)")
        }
    }

    private func read(_ path: String) throws(TestkitError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw TestkitError("cannot read \(path)") }
        return Array(data)
    }

    /// open(2) with the mode, so a key is never readable by others, not even for an instant.
    private func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(TestkitError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TestkitError("cannot write \(path): \(SystemCallError.last)") }
        defer { close(fd) }
        _ = fchmod(fd, mode)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw TestkitError("cannot write \(path): \(SystemCallError.last)") }
            offset += written
        }
    }
}
