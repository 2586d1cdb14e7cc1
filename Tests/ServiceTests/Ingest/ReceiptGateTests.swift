import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// StoreKit 1 receipts are checked locally before Apple is asked: text that is not base64 of a
/// PKCS#7 SignedData is a 400 and the (stand-in) verifyReceipt server sees no request. Before,
/// `{"receipt": "!!!not base64!!!"}` went to Apple and answered 502 when Apple was unreachable.
@Suite(.tags(.database)) struct ReceiptGateTests {
    @Test func aReceiptThatCannotBeOneIs400AndAppleIsNeverAsked() throws {
        let apple = try StandInServer([
            "/prod": [(200, VerificationTests.sandboxReceipt)],
            "/sandbox": [(200, VerificationTests.sandboxReceipt)],
        ])
        defer { apple.stop() }
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)"))
        defer { service.stop() }
        let client = service.client("write")
        let certificate = JWSSigner.base64(TestVectors.shared.rootDER)
        for bad in [
            "!!!not base64!!!", "", "QUJD\u{1}", "MIIT" + String(repeating: "QUJD", count: 40) + "QQ==", certificate,
            TestReceipts.receipt() + "AAAA",
        ] {
            let response = try client.receipt("u-gate", bad)
            #expect(response.status == 400, "\(bad.prefix(30)): \(response.text)")
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.json["code"]?.stringValue == "invalid_request")
            #expect(response.json["detail"]?.stringValue?.hasPrefix("receipt ") == true, "\(response.text)")
        }
        #expect(apple.hitCount("/prod") == 0 && apple.hitCount("/sandbox") == 0, "a bad receipt reached verifyReceipt")
        #expect(try storedEventCount(service) == 0)

        // The same server does see a receipt of the real shape (the probe above can fail).
        let good = try client.receipt("u-gate", TestReceipts.receipt())
        #expect(good.status == 200, "\(good.text)")
        #expect(apple.hitCount("/prod") == 1)
    }

    /// Without `receipt.request_date_ms`, the facts are dated when the service asked (its clock),
    /// instead of being refused as `malformed`.
    @Test func anAnswerWithoutRequestDateIsRecordedAtTheTimeTheServiceAsked() throws {
        let undated = VerificationTests.sandboxReceipt
            .replacingOccurrences(of: #""request_date_ms":"1760000000000","#, with: "")
            .replacingOccurrences(of: #""environment":"Sandbox""#, with: #""environment":"Production""#)
        #expect(!undated.contains("request_date_ms"))
        let apple = try StandInServer(["/prod": [(200, undated)]])
        defer { apple.stop() }
        let clock = TestClock()
        let askedAt: Int64 = 1_770_000_000_000
        clock.set(askedAt)
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)"), clock: clock)
        defer { service.stop() }
        let response = try service.client("write").receipt("u-undated", TestReceipts.receipt())
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(response.json["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        let events = try service.client("read").events("u-undated")
        let signedDates = events.compactMap { $0["data"]?["signedDate"] }
        #expect(!signedDates.isEmpty, "\(events)")
        for date in signedDates {
            // The event data may carry epoch ms or RFC 3339; either way it is the asking instant.
            let millis = date.int64Value ?? date.stringValue.flatMap { RFC3339.parse($0) }
            #expect(millis.map { abs($0 - askedAt) < 60_000 } == true, "signedDate \(date), asked at \(askedAt)")
        }
    }
}
