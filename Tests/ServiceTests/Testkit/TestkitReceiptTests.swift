import Foundation
import Glibc
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// StoreKit 1 end to end on the test store, every piece a real process: `testkit init` points
/// verifyReceipt at the stand-in, `testkit apple` answers it, `serve` verifies through it, and
/// `testkit receipt` posts the receipt of a purchase.
@Suite(.serialized, .tags(.database, .slow)) struct TestkitReceiptTests {
    /// `testkit apple` as a child, once it says where it listens.
    static func startStandIn(data: String, port: Int) throws -> OpsChild {
        let child = try OpsChild(
            ["testkit", "apple", "--data-dir", data, "--port", String(port)], environment: OpsBinary.environment([:]))
        let listening = "listening on http://127.0.0.1:\(port)/verifyReceipt"
        _ = try? eventually("testkit apple to listen", within: 30) {
            child.stdout.contains(listening) || !child.isRunning
        }
        guard child.stdout.contains(listening), child.isRunning else {
            child.kill(SIGKILL)
            throw OpsFailure("testkit apple did not come up: \(child.stdout) \(child.stderr)")
        }
        return child
    }

    @Test func aReceiptPostedThroughTheStandInGrantsTheSubscriptionAndASecondReceiptIsADuplicate() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let applePort = try FreePorts.consecutive()
        let initialised = try OpsBinary.run(["testkit", "init", "--data-dir", data, "--apple-port", String(applePort)])
        #expect(initialised.status == 0, "\(initialised.stderr)")
        #expect(initialised.stdout.contains("http://127.0.0.1:\(applePort)/verifyReceipt"))
        let config = try Configuration.load(path: data + "/testkit/config.json")
        #expect(config.verifyReceipt.production == "http://127.0.0.1:\(applePort)/verifyReceipt")
        #expect(config.verifyReceipt.sandbox == config.verifyReceipt.production)
        let secret = try #require(config.apps.first?.sharedSecret)
        #expect(secret.count == 32 && secret.allSatisfy(\.isHexDigit))

        let standIn = try Self.startStandIn(data: data, port: applePort)
        defer {
            standIn.kill(SIGTERM)
            #expect(standIn.wait(timeout: 30) == 0, "the stand-in stops on SIGTERM: \(standIn.stderr)")
        }
        let serve = try OpsServe(["--port", "0", "--config", data + "/testkit/config.json", "--data-dir", data])
        defer { _ = serve.stop() }
        let created = try OpsBinary.run(["keys", "create", "--name", "t", "--scopes", "read,write", "--data-dir", data])
        #expect(created.status == 0, "\(created.stderr)")
        let key = try #require(created.stdout.split(separator: "\n").last.map(String.init))
        let environment = ["IAP_LEDGER_URL": serve.url, "IAP_LEDGER_KEY": key]

        let bought = try OpsBinary.run(
            ["testkit", "receipt", "--data-dir", data, "--user", "u-1", "--product", TestkitStore.subscription],
            environment: environment)
        #expect(bought.status == 0, "\(bought.stdout) \(bought.stderr)")
        let answer = try JSONValue.parse(bought.stdout)
        let entries = try #require(answer["transactions"]?.arrayValue)
        #expect(entries.count == 1)
        #expect(entries.first?["transactionId"]?.stringValue == "2000000001")
        #expect(entries.first?["result"]?.stringValue == "recorded")

        let user = try OpsHTTP.get(port: serve.port, "/v1/users/u-1", headers: ["Authorization": "Bearer \(key)"])
        #expect(user.status == 200)
        let document = try JSONValue.parse(user.body)
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true, "\(user.body)")
        #expect(document["subscriptions"]?.arrayValue?.first?["environment"]?.stringValue == "LocalTesting")
        #expect(
            document["subscriptions"]?.arrayValue?.first?["autoRenew"]?.boolValue == true,
            "pending_renewal_info reached the service")

        // A new receipt of the same purchase (as a restore makes): nothing new.
        let again = try OpsBinary.run(
            ["testkit", "receipt", "--data-dir", data, "--user", "u-1"], environment: environment)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        let repeated = try JSONValue.parse(again.stdout)
        #expect(
            repeated["transactions"]?.arrayValue?.map { $0["result"]?.stringValue } == ["duplicate"], "\(again.stdout)")

        // A renewal the store minted since is in the next receipt, and only it is new.
        let renewed = try OpsBinary.run(
            [
                "testkit", "notify", "--data-dir", data, "--type", "DID_RENEW", "--original-transaction-id",
                "2000000001", "--print",
            ])
        #expect(renewed.status == 0, "\(renewed.stderr)")
        let third = try OpsBinary.run(
            ["testkit", "receipt", "--data-dir", data, "--user", "u-1"], environment: environment)
        let results = try JSONValue.parse(third.stdout)["transactions"]?.arrayValue ?? []
        #expect(
            Dictionary(
                uniqueKeysWithValues: results.map {
                    ($0["transactionId"]?.stringValue ?? "", $0["result"]?.stringValue ?? "")
                })
                == ["2000000001": "duplicate", "2000000002": "recorded"], "\(third.stdout) \(third.stderr)")
    }

    @Test func theStandInRefusesWhatAppleWouldAndTheServiceSaysSo() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let other = root + "/other"
        let applePort = try FreePorts.consecutive()
        #expect(
            try OpsBinary.run(["testkit", "init", "--data-dir", data, "--apple-port", String(applePort)]).status == 0)
        #expect(try OpsBinary.run(["testkit", "init", "--data-dir", other]).status == 0)
        let standIn = try Self.startStandIn(data: data, port: applePort)
        defer {
            standIn.kill(SIGTERM)
            _ = standIn.wait(timeout: 30)
        }
        // A second stand-in on the same port is one line naming the port.
        let clash = try OpsBinary.run(["testkit", "apple", "--data-dir", data, "--port", String(applePort)])
        #expect(clash.status == 1)
        #expect(
            clash.stderrLines.count == 1 && clash.stderr.contains("cannot listen on 127.0.0.1:\(applePort)"),
            "\(clash.stderr)")

        let serve = try OpsServe(["--port", "0", "--config", data + "/testkit/config.json", "--data-dir", data])
        defer { _ = serve.stop() }
        let created = try OpsBinary.run(["keys", "create", "--name", "t", "--scopes", "read,write", "--data-dir", data])
        let key = try #require(created.stdout.split(separator: "\n").last.map(String.init))
        // A receipt of another test store, signed by another CA: 21003, final.
        let foreign = try OpsBinary.run(
            ["testkit", "receipt", "--data-dir", other, "--user", "u-1", "--product", TestkitStore.removeAds],
            environment: ["IAP_LEDGER_URL": serve.url, "IAP_LEDGER_KEY": key])
        #expect(foreign.status == 1)
        let problem = try JSONValue.parse(foreign.stdout)
        #expect(problem["code"]?.stringValue == "verification_failed", "\(foreign.stdout)")
        #expect(problem["reason"]?.stringValue == "receipt_rejected")
        #expect(problem["appleStatus"]?.int64Value == 21003)
        #expect(foreign.stderr.contains("HTTP 422"))
    }
}
