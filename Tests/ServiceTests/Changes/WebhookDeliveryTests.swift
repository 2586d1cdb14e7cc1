import AppStore
import EventStore
import Foundation
import HTTP
import JSON
import Ledger
import Synchronization
import TestSupport
import Testing

@testable import Changes
@testable import Infrastructure
@testable import Service

/// A webhook receiver over real HTTP (the service's own HTTP server): answers what `answer`
/// says, and checks every request's Standard Webhooks signature with its own code (HMAC over
/// `id.timestamp.body`, keyed by the secret's decoded part, compared to each `v1,` entry).
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        var id: String
        var timestamp: Int64
        var signatureValid: Bool
        var body: [UInt8]
        var at: Date
    }

    typealias Answer = @Sendable (_ request: HTTPRequest, _ attemptOfThisId: Int) -> HTTPResponse

    private let server: HTTPServer
    let port: Int
    private let received = Mutex<[Received]>([])
    private let attemptsById = Mutex<[String: Int]>([:])
    private let answer: Mutex<Answer>

    init(threads: Int = 8, answer: @escaping Answer = { _, _ in HTTPResponse(status: 204) }) throws {
        let key = Array(Data(base64Encoded: String(WebhookTests.secret.dropFirst(6)))!)
        self.answer = Mutex(answer)
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.threadCount = threads
        configuration.shutdownGraceSeconds = 0.5
        let box = ReceiverBox()
        server = HTTPServer(configuration: configuration) { request in box.handle(request) }
        port = try server.start()
        box.receiver = self
        box.key = key
    }

    private final class ReceiverBox: @unchecked Sendable {
        weak var receiver: WebhookReceiver?
        var key: [UInt8] = []
        func handle(_ request: HTTPRequest) -> HTTPResponse {
            guard let receiver else { return HTTPResponse(status: 503) }
            let id = request.header("webhook-id") ?? ""
            let timestamp = request.header("webhook-timestamp") ?? ""
            var message = Array("\(id).\(timestamp).".utf8)
            message += request.body
            let expected = Data(HMACSHA256.authenticate(key: key, message: message)).base64EncodedString()
            let offered = (request.header("webhook-signature") ?? "").split(separator: " ")
            let valid = offered.contains { $0.hasPrefix("v1,") && $0.dropFirst(3) == expected }
            receiver.received.withLock { list in
                list.append(
                    .init(
                        path: request.path, id: id, timestamp: Int64(timestamp) ?? 0, signatureValid: valid,
                        body: request.body, at: Date()))
            }
            let attempt = receiver.attemptsById.withLock { counts in
                counts[request.path + " " + id, default: 0] += 1
                return counts[request.path + " " + id]!
            }
            return receiver.answer.withLock { $0 }(request, attempt)
        }
    }

    func url(_ path: String = "/hook") -> String { "http://127.0.0.1:\(port)\(path)" }
    var requests: [Received] { received.withLock { $0 } }
    func requests(id: String) -> [Received] { requests.filter { $0.id == id } }
    func setAnswer(_ answer: @escaping Answer) { self.answer.withLock { $0 = answer } }
    func stop() { server.stop() }
}

/// Webhook delivery end to end: a real service (PostgreSQL, its dispatcher) and real receivers.
/// Changes are written with the feed's own insert, as the write paths do.
@Suite(.tags(.database, .slow)) final class WebhookDeliveryTests {
    var cleanups: [() -> Void] = []
    deinit { for cleanup in cleanups.reversed() { cleanup() } }

    func endpoint(
        _ name: String, _ receiver: WebhookReceiver, path: String = "/hook", schedule: [Double] = [1, 2],
        timeout: Double = 5, environments: Set<String>? = nil, types: Set<String>? = nil
    ) -> WebhookEndpoint {
        WebhookEndpoint(
            name: name, url: receiver.url(path), secret: WebhookTests.secret, environments: environments, types: types,
            timeoutSeconds: timeout, retrySchedule: schedule)
    }

    func service(_ endpoints: [WebhookEndpoint], sharing other: TestService? = nil) throws -> TestService {
        var configuration = TestService.configuration()
        configuration.webhooks = endpoints
        let service = try TestService(configuration: configuration, sharing: other)
        cleanups.append { service.stop() }
        // A new endpoint starts at the feed's head: wait until it has taken its place.
        let connection = try Connection(service.conninfo)
        for endpoint in endpoints {
            try eventually("cursor of \(endpoint.name)") {
                !(try connection.query(WebhookDeliveriesTable.cursor(endpoint: endpoint.name))).isEmpty
            }
        }
        return service
    }

    func receiver(threads: Int = 8, answer: @escaping WebhookReceiver.Answer = { _, _ in HTTPResponse(status: 204) })
        throws
        -> WebhookReceiver
    {
        let receiver = try WebhookReceiver(threads: threads, answer: answer)
        cleanups.append { receiver.stop() }
        return receiver
    }

    /// Writes changes to the feed, one transaction; answers them as stored.
    @discardableResult
    func emit(_ service: TestService, _ changes: [(type: ChangeType, user: String?, environment: String?)]) throws
        -> [StoredChange]
    {
        let connection = try Connection(service.conninfo)
        let news = changes.map { change in
            NewChange(
                userId: change.user,
                draft: ChangeDraft(
                    type: change.type, environment: change.environment, occurredAt: 1_800_000_000_000,
                    productId: "com.example.monthly", entitlementIds: ["pro"]),
                customer: #"{"userId":"\#(change.user ?? "")","entitlements":{}}"#)
        }
        // Users as a database from before subjects has them (id = subject, no key): stored in clear.
        try Self.registerLegacy(changes.compactMap(\.user), on: connection)
        let insert = ChangeFeedTable.insert(
            try ChangeSealing.rows(news, subjects: Subjects()), recordedAt: 1_800_000_000_500)!
        let rows = try connection.transaction { connection in
            try connection.query(insert.sql + " RETURNING seq", insert.params)
        }
        let seqs = (0..<rows.count).compactMap { rows[$0, 0].flatMap { Int64($0) } }
        return try ChangeFeedTable.opened(try connection.query(ChangeFeedTable.changes(seqs: seqs)), on: connection)
            .changes
    }

    /// Identity rows of users who never wrote (the feed serves a change only of a known user).
    static func registerLegacy(_ users: [String], on connection: Connection) throws {
        _ = try connection.execute(
            "INSERT INTO identity.subjects (user_id, subject) SELECT u, u FROM unnest($1::text[]) AS u ON CONFLICT DO NOTHING",
            [PostgresArray.literal(users)])
    }

    func deliveries(_ service: TestService, _ endpoint: String, status: String? = nil) throws -> [JSONValue] {
        let query = status.map { "?status=\($0)&limit=1000" } ?? "?limit=1000"
        let response = try service.client("admin").get("/v1/admin/webhooks/\(endpoint)/deliveries\(query)")
        guard response.status == 200 else {
            throw HTTPTestConnection.Failure(description: "deliveries: \(response.text)")
        }
        return response.json["deliveries"]?.arrayValue ?? []
    }

    func delivery(_ service: TestService, _ endpoint: String, _ id: String) throws -> JSONValue? {
        try deliveries(service, endpoint).first { $0["id"]?.stringValue == id }
    }

    func status(_ service: TestService, _ endpoint: String, _ id: String) throws -> String? {
        try delivery(service, endpoint, id)?["status"]?.stringValue
    }

    // MARK: -

    @Test func aChangeReachesTheReceiverSignedWithTheFeedsExactBody() throws {
        let receiver = try receiver()
        let service = try service([endpoint("backend", receiver)])
        let change = try emit(service, [(.renewal, "u-1", "Production")])[0]
        try eventually("delivered") { try status(service, "backend", change.id) == "delivered" }
        let got = receiver.requests(id: change.id)
        #expect(got.count == 1)
        #expect(got.first?.signatureValid == true)
        #expect(got.first?.body == change.jsonBytes())
        // The feed's bytes are what the pull feed serves too: the body names the same id and cursor.
        let body = try JSONValue.parse(got.first?.body ?? [])
        #expect(body["id"]?.stringValue == change.id)
        #expect(body["cursor"]?.stringValue == change.cursor.description)
        let timestamp = got.first?.timestamp ?? 0
        #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) < 60)

        let overview = try service.client("admin").get("/v1/admin/webhooks")
        #expect(overview.status == 200)
        let first = overview.json["endpoints"]?.arrayValue?.first
        #expect(first?["name"]?.stringValue == "backend")
        #expect(first?["url"]?.stringValue == receiver.url())
        #expect(first?["counts"]?["delivered"]?.int64Value == 1)
        #expect(first?["counts"]?["pending"]?.int64Value == 0)
        #expect(first?["oldestPendingSeconds"]?.int64Value == 0)
        let attempts = try delivery(service, "backend", change.id)?["attempts"]?.arrayValue ?? []
        #expect(attempts.count == 1)
        #expect(attempts.first?["httpStatus"]?.int64Value == 204)
        #expect(attempts.first?["at"]?.stringValue.flatMap(RFC3339.parse) != nil)
        let metrics = try service.client(nil).get("/metrics").text
        #expect(metrics.contains(#"iap_webhook_deliveries_total{endpoint="backend",result="delivered"} 1"#))
        #expect(metrics.contains(#"iap_webhook_pending{endpoint="backend"} 0"#))
        #expect(metrics.contains(#"iap_webhook_oldest_pending_seconds{endpoint="backend"} 0"#))
    }

    @Test func aReceiverFailingTwiceGetsItOnTheThirdAttemptAtTheScheduledDelays() throws {
        let receiver = try receiver { _, attempt in HTTPResponse(status: attempt <= 2 ? 500 : 200) }
        let service = try service([endpoint("backend", receiver, schedule: [1, 2])])
        let change = try emit(service, [(.renewal, "u-1", "Production")])[0]
        try eventually("delivered") { try status(service, "backend", change.id) == "delivered" }
        let got = receiver.requests(id: change.id)
        #expect(got.count == 3)
        #expect(got.allSatisfy { $0.id == change.id && $0.signatureValid && $0.body == change.jsonBytes() })
        let attempts = try delivery(service, "backend", change.id)?["attempts"]?.arrayValue ?? []
        let times = attempts.compactMap { $0["at"]?.stringValue.flatMap(RFC3339.parse) }
        #expect(attempts.map { $0["httpStatus"]?.int64Value } == [500, 500, 200])
        try #require(times.count == 3)
        // 1 s then 2 s, ±10 % jitter, plus the dispatcher's round (≤ 0.1 s) and the attempt itself.
        let gaps = [Double(times[1] - times[0]) / 1000, Double(times[2] - times[1]) / 1000]
        #expect(gaps[0] >= 0.85 && gaps[0] <= 1.6, "gaps \(gaps)")
        #expect(gaps[1] >= 1.75 && gaps[1] <= 2.8, "gaps \(gaps)")
        #expect(service.log.text.contains("webhook attempt failed"))
        #expect(service.log.text.contains(change.id))
        #expect(!service.log.text.contains("\"customer\""), "no body in the log")
    }

    @Test func aReceiverThatNeverAnswersEndsDeadAndRedeliverBringsIt() throws {
        // Each attempt hangs past the 1 s timeout: no answer at all until the test saw both end.
        let hang = Gate()
        defer { hang.open() }
        let receiver = try receiver { _, _ in
            hang.wait(within: 30)
            return HTTPResponse(status: 200)
        }
        let service = try service([endpoint("backend", receiver, schedule: [1], timeout: 1)])
        let change = try emit(service, [(.expiration, "u-1", "Production")])[0]
        try eventually("dead") { try status(service, "backend", change.id) == "dead" }
        let attempts = try delivery(service, "backend", change.id)?["attempts"]?.arrayValue ?? []
        #expect(attempts.count == 2)
        #expect(
            attempts.allSatisfy {
                $0["httpStatus"]?.isNull == true && $0["error"]?.stringValue?.contains("timed out") == true
            })
        let dead = try service.client("admin").get("/v1/admin/webhooks").json["endpoints"]?.arrayValue?.first?["counts"]
        #expect(dead?["dead"]?.int64Value == 1)

        hang.open()
        receiver.setAnswer { _, _ in HTTPResponse(status: 200) }
        let queued = try service.client("admin").post(
            "/v1/admin/webhooks/backend/redeliver", .object(["status": "dead"]))
        #expect(queued.status == 200)
        #expect(queued.json["queued"]?.int64Value == 1)
        try eventually("delivered after redeliver") { try status(service, "backend", change.id) == "delivered" }
        #expect(receiver.requests(id: change.id).last?.signatureValid == true)
        // By id too: a delivered change sent again, the same webhook-id.
        let again = try service.client("admin").post(
            "/v1/admin/webhooks/backend/redeliver",
            .object(["ids": .array([.string(change.id), "chg_999999999999999"])]))
        #expect(again.json["queued"]?.int64Value == 1)
        #expect(again.json["notQueued"]?.arrayValue?.compactMap(\.stringValue) == ["chg_999999999999999"])
        try eventually("sent again") { receiver.requests(id: change.id).count == 4 }
    }

    @Test func aUsersSecondChangeWaitsWhileTheFirstFailsAndAnotherUsersGoes() throws {
        let failing = Atomic<Bool>(true)
        let firstId = Mutex<String>("")
        let receiver = try receiver { request, _ in
            let id = request.header("webhook-id") ?? ""
            return HTTPResponse(status: failing.load(ordering: .relaxed) && id == firstId.withLock({ $0 }) ? 503 : 200)
        }
        let service = try service([endpoint("backend", receiver, schedule: [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3])])
        // Know the first id before the dispatcher can send it: the feed's next seq.
        let probe = try emit(service, [(.test, nil, nil)])[0]
        firstId.withLock { $0 = StoredChange.id(seq: probe.seq + 1) }
        let changes = try emit(
            service,
            [
                (.renewal, "u-1", "Production"), (.cancellation, "u-1", "Production"),
                (.renewal, "u-2", "Production"),
            ])
        #expect(changes[0].id == firstId.withLock { $0 })
        try eventually("the other user's change delivered") {
            try status(service, "backend", changes[2].id) == "delivered"
        }
        try eventually("the first retried") { receiver.requests(id: changes[0].id).count >= 3 }
        #expect(receiver.requests(id: changes[1].id).isEmpty, "sent while the first of its user was failing")
        #expect(try status(service, "backend", changes[1].id) == "pending")
        // The gauge counts what is open: the failing first and the second behind it (the other
        // user's and the probe are delivered).
        try eventually("the pending gauge at 2") {
            try service.client(nil).get("/metrics").text.contains(#"iap_webhook_pending{endpoint="backend"} 2"#)
        }

        failing.store(false, ordering: .relaxed)
        try eventually("both delivered") { try status(service, "backend", changes[1].id) == "delivered" }
        let firstOk = try #require(receiver.requests(id: changes[0].id).last?.at)
        let second = try #require(receiver.requests(id: changes[1].id).first?.at)
        #expect(firstOk <= second)
    }

    @Test func filtersByEnvironmentAndTypeAndANullEnvironmentGoesToAll() throws {
        let receiver = try receiver()
        let service = try service([
            endpoint(
                "prod", receiver, path: "/prod", environments: ["Production"],
                types: ["RENEWAL", "BALANCE_DEBIT", "TEST"]),
            endpoint("all", receiver, path: "/all"),
        ])
        let changes = try emit(
            service,
            [
                (.renewal, "u-1", "Production"), (.renewal, "u-2", "Sandbox"), (.balanceDebit, "u-3", nil),
                (.initialPurchase, "u-4", "Production"), (.expiration, "u-5", nil), (.test, nil, nil),
            ])
        for endpoint in ["prod", "all"] {
            try eventually("\(endpoint) caught up") { try status(service, endpoint, changes[5].id) == "delivered" }
        }
        let prod = Set(receiver.requests.filter { $0.path == "/prod" }.map(\.id))
        let all = Set(receiver.requests.filter { $0.path == "/all" }.map(\.id))
        #expect(prod == Set([changes[0].id, changes[2].id, changes[5].id]))
        #expect(all == Set(changes.map(\.id)))
    }

    @Test func redirectsAreNotFollowed() throws {
        let receiver = try receiver { request, _ in
            request.path == "/hook"
                ? HTTPResponse(status: 302, headers: ["Location": "/elsewhere"]) : HTTPResponse(status: 200)
        }
        let service = try service([endpoint("backend", receiver, schedule: [0.2])])
        let change = try emit(service, [(.renewal, "u-1", "Production")])[0]
        try eventually("dead") { try status(service, "backend", change.id) == "dead" }
        #expect(receiver.requests.filter { $0.path == "/elsewhere" }.isEmpty)
        let attempts = try delivery(service, "backend", change.id)?["attempts"]?.arrayValue ?? []
        #expect(attempts.map { $0["httpStatus"]?.int64Value } == [302, 302])
    }

    @Test func aHugeOrSlowAnswerNeverStallsAnotherEndpoint() throws {
        let huge = try receiver { _, _ in HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 4 << 20)) }
        // Answers past its 6 s timeout: only once the test is over.
        let slowAnswer = Gate()
        defer { slowAnswer.open() }
        let slow = try receiver(threads: 4) { _, _ in
            slowAnswer.wait(within: 60)
            return HTTPResponse(status: 200)
        }
        let fast = try receiver()
        let service = try service([
            endpoint("huge", huge), endpoint("slow", slow, timeout: 6), endpoint("fast", fast),
        ])
        let changes = try emit(service, (1...8).map { (.renewal, "u-\($0)", "Production") })
        try eventually("fast delivered everything") {
            try deliveries(service, "fast", status: "delivered").count == changes.count
        }
        // Meanwhile the slow receiver's first attempts have not even ended (each takes its 6 s timeout).
        let slowAttempts = try deliveries(service, "slow").flatMap { $0["attempts"]?.arrayValue ?? [] }
        #expect(slowAttempts.isEmpty, "fast waited for slow: \(slowAttempts.count) slow attempts already recorded")
        try eventually("huge answered, capped, delivered") {
            try deliveries(service, "huge", status: "delivered").count == changes.count
        }
        let first = try deliveries(service, "huge").first?["attempts"]?.arrayValue?.first
        #expect(first?["httpStatus"]?.int64Value == 200)
    }

    @Test func twoInstancesOnOneDatabaseDeliverEachChangeOnce() throws {
        let receiver = try receiver()
        let hook = endpoint("backend", receiver)
        let first = try service([hook])
        let second = try service([hook], sharing: first)
        var changes: [StoredChange] = []
        for round in 0..<10 {
            changes += try emit(first, (0..<10).map { (.renewal, "u-\(($0 + round) % 7)", "Production") })
        }
        try eventually("all delivered") {
            let sent = Set(receiver.requests.map(\.id)).count
            return try sent == changes.count
                && deliveries(second, "backend", status: "delivered").count == changes.count
        }
        var counts: [String: Int] = [:]
        for request in receiver.requests { counts[request.id, default: 0] += 1 }
        #expect(
            counts.values.allSatisfy { $0 == 1 }, "delivered twice: \(counts.filter { $0.value > 1 }.keys.sorted())")
        #expect(receiver.requests.allSatisfy { $0.signatureValid })
        // Per user, in cursor order.
        var byUser: [String: [Int64]] = [:]
        let seqOf = Dictionary(uniqueKeysWithValues: changes.map { ($0.id, $0.seq) })
        let userOf = Dictionary(uniqueKeysWithValues: changes.map { ($0.id, $0.userId ?? "") })
        for request in receiver.requests { byUser[userOf[request.id]!, default: []].append(seqOf[request.id]!) }
        #expect(byUser.values.allSatisfy { $0 == $0.sorted() })

        // The holder goes away: the other takes over within seconds.
        first.stop()
        let late = try emit(second, [(.renewal, "u-late", "Production")])[0]
        try eventually("delivered by the survivor", within: 60) { receiver.requests(id: late.id).count == 1 }
    }

    /// A new endpoint starts at the head when the service starts, before it answers anything:
    /// a change written after that reaches it even when its deliverer first runs much later
    /// (here another instance holds its lease, as after a `kill -9`; before, the deliverer
    /// placed the cursor on its first run, past every change written meanwhile).
    @Test func aNewEndpointGetsTheChangesWrittenBeforeItsDelivererFirstRuns() throws {
        let receiver = try receiver()
        let first = try service([])
        let admin = try Connection(first.conninfo)
        try emit(first, [(.renewal, "u-before", "Production")])
        // Below the horizon before the endpoint is placed: another test's open transaction can
        // hold the horizon, and the head with it, behind this change (it would then come too).
        try ChangeFeedTests.settle(first.conninfo)
        let lease = WebhookDispatcher.leaseName("backend")
        try admin.execute(
            """
            INSERT INTO ops.leases (name, holder, claim, token, acquired_at, renewed_at, expires_at)
            VALUES ($1, 'elsewhere:1', 'another-claim', nextval('ops.lease_tokens'), now(), now(), now() + interval '1 hour')
            """, [lease])
        let second = try service([endpoint("backend", receiver)], sharing: first)
        let change = try emit(second, [(.renewal, "u-1", "Production")])[0]
        #expect(receiver.requests.isEmpty, "sent while another instance holds the lease")
        try admin.execute("UPDATE ops.leases SET expires_at = now() - interval '1 second' WHERE name = $1", [lease])
        try eventually("delivered once the lease came free", within: 30) {
            receiver.requests(id: change.id).count == 1
        }
        // The change from before the endpoint existed is not sent (it starts at the head).
        #expect(receiver.requests.map(\.id) == [change.id])
    }

    @Test func unknownEndpointAndBadQueriesAreRefusedClearly() throws {
        let receiver = try receiver()
        let service = try service([endpoint("backend", receiver)])
        let admin = service.client("admin")
        let missing = try admin.get("/v1/admin/webhooks/nope/deliveries")
        #expect(missing.status == 404)
        #expect(missing.json["code"]?.stringValue == "not_found")
        #expect(try admin.post("/v1/admin/webhooks/nope/redeliver", .object(["status": "dead"])).status == 404)
        for query in ["?status=lost", "?limit=0", "?limit=1001", "?limit=x", "?colour=red"] {
            let response = try admin.get("/v1/admin/webhooks/backend/deliveries\(query)")
            #expect(response.status == 400, "\(query)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        for body: JSONValue in [
            .object([:]), .object(["ids": .array([])]), .object(["ids": .array(["abc"])]),
            .object(["status": "delivered"]), .object(["ids": .array(["chg_1"]), "status": "dead"]), .array([]),
        ] {
            let response = try admin.post("/v1/admin/webhooks/backend/redeliver", body)
            #expect(response.status == 400, "\(body)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        #expect(try service.client("read").get("/v1/admin/webhooks").status == 403)
    }
}

/// Two real `serve` processes on one database; the one delivering is killed with SIGKILL.
@Suite(.serialized, .tags(.database, .slow)) struct WebhookTakeoverTests {
    @Test func aKilledDelivererIsTakenOverAndEveryChangeStillArrives() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        // Sends hang until the first instance is killed, then are answered at once.
        let killed = Gate()
        let receiver = try WebhookReceiver(threads: 16) { _, _ in
            killed.wait(within: 60)
            return HTTPResponse(status: 200)
        }
        defer { receiver.stop() }
        defer { killed.open() }
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/config.json"
        try
            #"{"webhooks": [{"name": "backend", "url": "\#(receiver.url())", "secret": "\#(WebhookTests.secret)", "timeoutSeconds": 5, "retrySchedule": [0.5, 0.5, 0.5]}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let environment = ["DATABASE_URL": conninfo]
        let first = try OpsServe(["--port", "0", "--config", file], environment: environment)
        let connection = try Connection(conninfo)
        try eventually("the backend's delivery cursor", within: 60) {
            (try? connection.query(WebhookDeliveriesTable.cursor(endpoint: "backend")).isEmpty) == false
        }
        let second = try OpsServe(["--port", "0", "--config", file], environment: environment)
        defer { _ = second.stop() }

        let news = (0..<40).map { index in
            NewChange(
                userId: "u-\(index % 8)", draft: ChangeDraft(type: .renewal, environment: "Production", occurredAt: 1),
                customer: "{}")
        }
        try WebhookDeliveryTests.registerLegacy(news.compactMap(\.userId), on: connection)
        let insert = ChangeFeedTable.insert(try ChangeSealing.rows(news, subjects: Subjects()), recordedAt: 2)!
        let rows = try connection.transaction { connection in
            try connection.query(insert.sql + " RETURNING seq", insert.params)
        }
        let ids = (0..<rows.count).compactMap { rows[$0, 0].flatMap { Int64($0) } }.map { StoredChange.id(seq: $0) }
        #expect(ids.count == 40)
        // The first instance is mid-delivery (its sends hang) when it is killed.
        try eventually("!receiver.requests.isEmpty", within: 60) { !receiver.requests.isEmpty }
        #expect(first.stop(SIGKILL) == 128 + SIGKILL)
        killed.open()

        try eventually("not every change was delivered after the takeover: \(second.stderr.suffix(2000))", within: 90) {
            let delivered = try? connection.query(
                "SELECT count(*) FROM webhooks.deliveries WHERE endpoint = 'backend' AND status = 'delivered'")
            return delivered?[0, 0] == "40"
        }
        let received = Set(receiver.requests.filter(\.signatureValid).map(\.id))
        #expect(received == Set(ids))
        #expect(second.stderr.contains("webhooks: delivering"))
    }
}

extension WebhookDeliveryTests {
    /// More waiting changes of one user than the dispatcher reads in one page: the user behind them still gets hers.
    @Test func oneUsersLongQueueDoesNotHideAnotherUser() throws {
        let blockedId = Mutex<String>("")
        let receiver = try receiver { request, _ in
            HTTPResponse(status: request.header("webhook-id") == blockedId.withLock({ $0 }) ? 500 : 200)
        }
        let service = try service([endpoint("backend", receiver, schedule: [60])])
        let probe = try emit(service, [(.test, nil, nil)])[0]
        blockedId.withLock { $0 = StoredChange.id(seq: probe.seq + 1) }
        let queue = try emit(service, Array(repeating: (.renewal, "u-busy", "Production"), count: 700))
        #expect(queue[0].id == blockedId.withLock { $0 })
        let other = try emit(service, [(.renewal, "u-other", "Production")])[0]
        try eventually("the other user's change delivered") { try status(service, "backend", other.id) == "delivered" }
        #expect(receiver.requests(id: queue[1].id).isEmpty)
    }
}
