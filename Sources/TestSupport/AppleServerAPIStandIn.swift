import AppStore
import Foundation
import HTTP
import TestStore

/// Apple's App Store Server API on 127.0.0.1 for tests: one real HTTP server (the HTTP
/// target's) serving two environments under `/production` and `/sandbox`, each an
/// `AppStoreServerAPIStandIn` (which checks the JWT as Apple does and answers from the data it
/// was given). Point a client's base URLs at `productionURL` / `sandboxURL`.
///
/// A `.hang` fault holds its connection (a deferred response nobody completes) until the
/// client gives up or the server stops, so timeouts are met without a worker thread blocked.
public final class AppleServerAPIStandIn: @unchecked Sendable {
    public let production: AppStoreServerAPIStandIn
    public let sandbox: AppStoreServerAPIStandIn
    private let server: HTTPServer
    public let port: Int
    /// The clock the token check uses (epoch ms); tests may move it.
    private let clock: @Sendable () -> Int64

    /// - Parameters: the app and key Apple knows: bundle id, issuer id, key id and the key's public half.
    public init(
        bundleId: String, appAppleId: Int64? = nil, issuerId: String, keyId: String, publicKeyPEM: String,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws {
        production = try AppStoreServerAPIStandIn(
            environment: .production, bundleId: bundleId, appAppleId: appAppleId, issuerId: issuerId, keyId: keyId,
            publicKeyPEM: publicKeyPEM)
        sandbox = try AppStoreServerAPIStandIn(
            environment: .sandbox, bundleId: bundleId, appAppleId: appAppleId, issuerId: issuerId, keyId: keyId,
            publicKeyPEM: publicKeyPEM)
        self.clock = clock
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.threadCount = 2
        configuration.maxDeferredSeconds = 60
        configuration.shutdownGraceSeconds = 0.2
        let production = production
        let sandbox = sandbox
        server = HTTPServer(configuration: configuration) { request in
            Self.handle(request, production: production, sandbox: sandbox, now: clock())
        }
        port = try server.start()
    }

    /// A stand-in for the test key (`Tests/Fixtures/apple/test-pki/testSigningKey.p8`) and `TestVectors`' app.
    public convenience init(key: AppStoreServerKey, bundleId: String = TestVectors.bundleId) throws {
        try self.init(
            bundleId: bundleId, appAppleId: TestVectors.appAppleId, issuerId: key.issuerId, keyId: key.keyId,
            publicKeyPEM: key.publicKeyPEM)
    }

    deinit { server.stop() }

    public var productionURL: URL { URL(string: "http://127.0.0.1:\(port)/production")! }
    public var sandboxURL: URL { URL(string: "http://127.0.0.1:\(port)/sandbox")! }

    public func standIn(_ environment: AppStoreServerEnvironment) -> AppStoreServerAPIStandIn {
        environment == .production ? production : sandbox
    }

    public func stop() { server.stop() }

    private static func handle(
        _ request: HTTPRequest, production: AppStoreServerAPIStandIn, sandbox: AppStoreServerAPIStandIn, now: Int64
    ) -> HTTPResponse {
        let standIn: AppStoreServerAPIStandIn
        let rest: Substring
        if request.path.hasPrefix("/production/") {
            standIn = production
            rest = request.path.dropFirst("/production".count)
        } else if request.path.hasPrefix("/sandbox/") {
            standIn = sandbox
            rest = request.path.dropFirst("/sandbox".count)
        } else {
            return HTTPResponse(status: 404)
        }
        let answer = standIn.answer(
            method: request.method, path: String(rest), query: request.query,
            authorization: request.header("Authorization"), body: request.body, nowMillis: now)
        if answer.hang {
            // Never completed: the server answers 503 only when it stops, long after the client gave up.
            return .deferred(HTTPDeferred(timeout: .seconds(60), timeoutResponse: HTTPResponse(status: 504)))
        }
        return HTTPResponse(status: answer.status, headers: answer.headers, body: answer.body)
    }
}

extension AppStoreServerKey {
    /// App Store Connect's test key shipped with Apple's libraries (`testSigningKey.p8`).
    public static func testKey(issuerId: String = "issuer-test", keyId: String = "KEYTEST123") -> AppStoreServerKey {
        let path = TestVectors.fixtures.appendingPathComponent("test-pki/testSigningKey.p8").path
        do { return try AppStoreServerKey.load(issuerId: issuerId, keyId: keyId, path: path) } catch {
            preconditionFailure("test key unusable: \(error)")
        }
    }
}

/// Keys App Store Connect never issues, for the refusal tests (throwaway, generated for them).
public enum NotAppStoreKeys {
    /// EC on P-384: ES256 cannot sign with it.
    public static let p384PEM = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDCWNNxrvSLRn2jbVqKp
        N19rJ8706rL31z3Vnj/BdAxaJpG6CASZd91x+lxgRrymX4ahZANiAAQ6Yp00Ttas
        E2HC3j7Z4HmPVjeEjQna5GKSBg5y2IToX9sfngjCZyY94eiBWqhWyEiyL7ZKGse6
        6+qoQFb7/j2xUX2xoiM54y9G0MDbpT2SoZWTJKLnK2f9ZnU39qqJlKE=
        -----END PRIVATE KEY-----

        """
    /// Ed25519.
    public static let ed25519PEM = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIIMexPsNyKWOgw71YVwtYVCW/iN7fwsl7YQgEN7uziM+
        -----END PRIVATE KEY-----

        """
}
