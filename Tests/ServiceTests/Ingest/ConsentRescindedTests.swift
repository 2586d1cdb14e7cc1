import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §8, RESCIND_CONSENT (Notifications 2.19): a parent withdrew consent for a minor. The
/// notification has no `data`, only `appData` with a signed app transaction; it is verified as
/// Apple's verifier does, recorded, and every user with a transaction of that Apple Account gets
/// `consentRescindedAt` and a CONSENT_RESCINDED change. Access itself is unchanged.
@Suite(.tags(.database)) final class ConsentRescindedTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func buy(_ userId: String, _ transactionId: String, appleAccount: String) throws {
        let now = service.clock.now
        let transaction = Mint.transaction(
            transactionId, product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appTransactionId": .string(appleAccount)])
        #expect(try api.purchase(userId, Mint.signed(transaction)).status == 200)
    }

    @Test func everyUserOfTheAppleAccountIsToldOnceAndAccessStays() throws {
        try buy("u-rc1", "2740001", appleAccount: "704289572399201")
        try buy("u-rc2", "2740002", appleAccount: "704289572399201")
        try buy("u-rc3", "2740003", appleAccount: "704289572399202")
        let signedDate = service.clock.now - 5_000
        let notification = Mint.vectors.signedRescindConsent(
            appTransactionId: "704289572399201", signedDate: signedDate)
        let answer = try api.notify(notification)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json["result"]?.stringValue == "recorded")

        for user in ["u-rc1", "u-rc2"] {
            let customer = try api.user(user)
            #expect(customer["consentRescindedAt"]?.stringValue == RFC3339.format(signedDate), "\(customer)")
            #expect(customer["entitlements"]?["no_ads"]?["active"]?.boolValue == true, "\(customer)")
            // The feed shows a change once every transaction before it has committed: settled.
            let changes = try ChangeFeedTests.feed(api, userId: user, settled: service.conninfo)
                .filter { $0["type"]?.stringValue == "CONSENT_RESCINDED" }
            #expect(changes.count == 1, "\(changes)")
            #expect(changes.first?["details"]?["appTransactionId"]?.stringValue == "704289572399201")
            #expect(changes.first?["occurredAt"]?.stringValue == RFC3339.format(signedDate))
        }
        #expect(try api.user("u-rc3")["consentRescindedAt"] == nil)

        // Apple's redelivery is a duplicate: nothing new on anyone's stream.
        #expect(try api.notify(notification).json["result"]?.stringValue == "duplicate")
        let again = try api.notify(Mint.vectors.signedRescindConsent(appTransactionId: "704289572399201"))
        #expect(again.json["result"]?.stringValue == "recorded")
        let events = try api.events("u-rc1").filter { $0["type"]?.stringValue == "ConsentRescinded" }
        #expect(events.count == 1)
        #expect(try api.user("u-rc1")["consentRescindedAt"]?.stringValue == RFC3339.format(signedDate))

        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
    }

    /// After an alias merge the person is one: the hint naming the alias goes, and Apple's
    /// RESCIND_CONSENT for the alias's Apple Account tells the target (never the alias's stream).
    @Test func aMergedAliasIsOnePersonForHintsAndConsent() throws {
        try buy("anon-rc", "2740101", appleAccount: "704289572399301")
        try buy("u-rc-main", "2740102", appleAccount: "704289572399301")
        #expect(try api.user("u-rc-main")["sameAppleAccountAs"] == .array([.string("anon-rc")]))
        let merge = try api.post("/v1/users/u-rc-main/aliases", .object(["alias": "anon-rc"]))
        #expect(merge.status == 200, "\(merge.text)")
        #expect(try api.user("u-rc-main")["sameAppleAccountAs"] == nil)
        let signedDate = service.clock.now - 1_000
        let answer = try api.notify(
            Mint.vectors.signedRescindConsent(appTransactionId: "704289572399301", signedDate: signedDate))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try api.user("u-rc-main")["consentRescindedAt"]?.stringValue == RFC3339.format(signedDate))
        let targetEvents = try api.events("u-rc-main").filter { $0["type"]?.stringValue == "ConsentRescinded" }
        #expect(targetEvents.count == 1)
        #expect(targetEvents.first?["data"]?["userId"]?.stringValue == "u-rc-main")
    }

    /// As Apple's verifier: the app transaction must be signed by Apple's chain and be of the
    /// notification's app and environment; otherwise nothing is recorded.
    @Test func anAppTransactionOfAnotherAppOrEnvironmentIsRefused() throws {
        try buy("u-rc4", "2740004", appleAccount: "704289572399203")
        let otherApp = Mint.vectors.signedRescindConsent(
            appTransactionId: "704289572399203", appTransaction: ["bundleId": "com.example.other"])
        let refused = try api.notify(otherApp)
        #expect(refused.status == 400 || refused.status == 422, "\(refused.text)")
        let otherEnvironment = Mint.vectors.signedRescindConsent(
            appTransactionId: "704289572399203", appTransaction: ["receiptType": "Production"])
        let refusedToo = try api.notify(otherEnvironment)
        #expect(refusedToo.status == 400 || refusedToo.status == 422, "\(refusedToo.text)")
        let forged = Mint.vectors.signedRescindConsent(
            appTransactionId: "704289572399203", appData: ["signedAppTransactionInfo": "a.b.c"])
        #expect(try api.notify(forged).status / 100 == 4)
        #expect(try api.user("u-rc4")["consentRescindedAt"] == nil)
        #expect(try api.events("u-rc4").allSatisfy { $0["type"]?.stringValue != "ConsentRescinded" })
    }
}
