import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `POST /v1/admin/replay` rebuilds and swaps live projections, so its body is read strictly:
/// a wrong type, an unknown field or name, or an empty list is a 400 naming the field, and no
/// replay runs (before, `[{}]` and `[1]` were dropped to an empty list, which meant "all").
@Suite(.tags(.database)) struct AdminReplayBodyTests {
    static let refused: [(body: String, field: String)] = [
        (#"{"projections": [{}]}"#, "projections[0]"),
        (#"{"projections": [1]}"#, "projections[0]"),
        (#"{"projections": ["users", null]}"#, "projections[1]"),
        (#"{"projections": []}"#, "projections"),
        (#"{"projections": "users"}"#, "projections"),
        (#"{"projections": ["user"]}"#, "projections[0]"),
        (#"{"projection": 1}"#, "projection"),
        (#"{"projection": "everything"}"#, "projection"),
        (#"{"dryRun": "yes"}"#, "dryRun"),
        (#"{"dryRun": null}"#, "dryRun"),
        (#"{"dryrun": true}"#, "dryrun"),
        (#"{"dryRun": true, "force": true}"#, "force"),
        (#"[1]"#, "JSON object"),
        (#""users""#, "JSON object"),
    ]

    @Test func badBodiesAre400NamingTheFieldAndRunNoReplay() throws {
        let service = try TestService()
        defer { service.stop() }
        let writer = service.client("write")
        for index in 0..<3 {
            let purchase = try writer.purchase(
                "u-replay-\(index)",
                Mint.signed([
                    "transactionId": .string("91000\(index)"), "originalTransactionId": .string("91000\(index)"),
                ]))
            #expect(purchase.status == 200, "\(purchase.text)")
        }
        let admin = service.client("admin")
        #expect(try replayedEvents(service) == 0)
        for (body, field) in Self.refused {
            let response = try admin.request("POST", "/v1/admin/replay", body: Array(body.utf8))
            #expect(response.status == 400, "\(body): \(response.text)")
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.json["code"]?.stringValue == "invalid_request", "\(body)")
            let detail = response.json["detail"]?.stringValue ?? ""
            #expect(detail.contains(field), "\(body): detail \"\(detail)\" does not name \(field)")
        }
        #expect(try replayedEvents(service) == 0, "a refused body ran a replay")

        // The probe can see a replay: a valid body runs one over the three purchases.
        let valid = try admin.request(
            "POST", "/v1/admin/replay", body: Array(#"{"dryRun": true, "projections": ["users"]}"#.utf8))
        #expect(valid.status == 200, "\(valid.text)")
        #expect(valid.json["dryRun"]?.boolValue == true)
        #expect(try replayedEvents(service) >= 3)
    }

    @Test func theAcceptedShapesStillWork() throws {
        for body in [
            "", "  \n", "{}", #"{"dryRun": true}"#, #"{"projection": "users", "dryRun": true}"#,
            #"{"projections": ["users", "analytics"], "dryRun": true}"#,
        ] {
            let options = try AdminRoutes.replayOptions(Array(body.utf8))
            #expect(options.dryRun == body.contains("dryRun"), "\(body)")
        }
        let both = try AdminRoutes.replayOptions(Array(#"{"projections": ["analytics"], "projection": "users"}"#.utf8))
        #expect(both.projections == ["users", "analytics"])
    }

    /// `iap_replay_events`: events folded by the last replay (0 until one runs).
    private func replayedEvents(_ service: TestService) throws -> Int {
        let metrics = try service.client(nil).get("/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("iap_replay_events ") }
        return line.flatMap { Double($0.split(separator: " ")[1]) }.map { Int($0) } ?? -1
    }
}
