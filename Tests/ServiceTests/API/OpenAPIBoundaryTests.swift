import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The OpenAPI document says exactly what the service enforces. For every parameter and body
/// field of every documented operation, this sends values at each documented bound (just inside
/// and just outside; the bounds are read from the document served at `/openapi.json`, never
/// written here), plus a fixed net of lengths, control characters and wrong types that no bound
/// is derived from (so a constraint the document forgot shows up as well as one it invents),
/// to the running service; the document's verdict (a small JSON Schema evaluator below) must
/// equal the service's: refused = 400 `invalid_request` problem+json naming the field,
/// accepted = anything else (a 422 is a signed payload that passed validation and then failed
/// to verify; a 409 or 502 is a valid request the ledger or Apple turned down).
/// Every status the service answered must be documented for that operation.
@Suite(.serialized, .tags(.database)) final class OpenAPIBoundaryTests {
    let service: TestService
    let document: JSONValue
    private let counter = Counter()

    init() throws {
        // verifyReceipt points at a closed port: a receipt of the right shape answers 502, past validation.
        var configuration = TestService.configuration()
        configuration.webhooks = [
            WebhookEndpoint(name: "backend", url: "http://127.0.0.1:9/hook", secret: WebhookTests.secret)
        ]
        service = try TestService(configuration: configuration)
        document = try service.client(nil).get("/openapi.json").json
        // One change in the feed: GET /v1/changes probes with `wait` then find a page at once.
        let coins = TestVectors.shared.signedTransaction([
            "transactionId": "8100901", "originalTransactionId": "8100901", "productId": .string(TestService.coins),
            "type": "Consumable", "expiresDate": .null,
        ])
        let seeded = try service.client().purchase("u-seed", coins)
        guard seeded.status == 200 else {
            throw HTTPTestConnection.Failure(description: "seed purchase: \(seeded.text)")
        }
    }

    deinit { service.stop() }

    // MARK: The requests the probes start from (valid ones; the probes change one thing each)

    struct Base {
        var path: [String: String] = [:]
        var query: [String: String] = [:]
        var body: [String: JSONValue]?
    }

    /// Valid requests per operation; a closure so each probe gets fresh idempotency keys.
    func bases(_ operation: String) -> [() -> Base]? {
        let vectors = TestVectors.shared
        switch operation {
        case "POST /v1/purchases":
            let signed = vectors.signedTransaction(["transactionId": "8100001", "originalTransactionId": "8100001"])
            let receipt = TestReceipts.receipt()
            return [
                { Base(body: ["userId": "u-bound", "signedTransaction": .string(signed)]) },
                { Base(body: ["userId": "u-bound", "receipt": .string(receipt)]) },
            ]
        case "POST /v1/notifications/apple":
            let signed = vectors.signedNotification(type: "TEST", subtype: nil, transaction: nil, renewal: nil)
            return [{ Base(body: ["signedPayload": .string(signed)]) }]
        case "POST /v1/apple/retention-message":
            return [
                {
                    Base(body: [
                        "signedPayload": .string(
                            RetentionMessageTests.request(
                                chain: "8100001", product: TestService.monthly, locale: "en-US",
                                signed: TestVectors.nowMillis))
                    ])
                }
            ]
        case "GET /v1/users/{userId}":
            return [{ Base(path: ["userId": "u-bound"], query: ["asOf": "2026-12-29T10:00:00.000Z"]) }]
        case "GET /v1/users/{userId}/events":
            return [
                { Base(path: ["userId": "u-bound"], query: ["after": "0", "limit": "10"]) },
                { Base(path: ["userId": "u-bound"], query: ["before": "9223372036854775807", "limit": "10"]) },
            ]
        case "GET /console/{asset}":
            return [{ Base(path: ["asset": "app.js"]) }]
        case "POST /v1/users/{userId}/sync":
            // No serverAPI key in this service: a valid request is answered 422 before Apple is asked.
            let receipt = TestReceipts.receipt(
                AppReceiptContents(
                    bundleId: TestVectors.bundleId, appVersion: "1",
                    purchases: [
                        .init(
                            productId: TestService.coins, transactionId: "2000000001",
                            originalTransactionId: "2000000001",
                            purchaseDate: TestVectors.nowMillis, originalPurchaseDate: TestVectors.nowMillis)
                    ]
                ).der())
            return [
                { Base(path: ["userId": "u-bound"], body: ["transactionId": "2000000001"]) },
                { Base(path: ["userId": "u-bound"], body: ["receipt": .string(receipt)]) },
            ]
        case "POST /v1/admin/reconcile":
            // No serverAPI key in this service: a valid request is answered 422 before Apple is asked.
            return [{ Base(body: ["since": .string(RFC3339.format(TestVectors.nowMillis - 3_600_000))]) }]
        case "POST /v1/admin/apple/test-notification":
            // No serverAPI key in this service: a valid request is answered 422 before Apple is asked.
            return [{ Base(body: ["bundleId": .string(TestVectors.bundleId), "environment": "Sandbox"]) }]
        case "GET /v1/admin/apple/test-notification/{token}":
            return [
                {
                    Base(
                        path: ["token": "ce3af791-365e-4c60-841b-1674b43c1609_1656543026813"],
                        query: ["bundleId": TestVectors.bundleId, "environment": "Sandbox"])
                }
            ]
        case "GET /v1/changes":
            // The feed holds a change (seeded in init), so a valid `wait` probe is answered at once.
            return [{ Base(query: ["after": "0-0", "limit": "10", "wait": "0"]) }]
        case "GET /v1/subscriptions/{originalTransactionId}":
            return [{ Base(path: ["originalTransactionId": "8100001"]) }]
        case "GET /v1/lookup":
            // The seeded purchase's id; each probe of the other parameters names that one alone
            // (x-exactly-one-of). No serverAPI key here: a valid orderId is a 422, past validation.
            return [{ Base(query: ["transactionId": "8100901"]) }]
        case "POST /v1/subscriptions/{originalTransactionId}/extend":
            // No chain 8100999 is recorded: a valid request is a 404, past validation.
            return [
                {
                    Base(
                        path: ["originalTransactionId": "8100999"],
                        body: ["days": .int(7), "reason": .int(1), "requestId": "r-bound"])
                }
            ]
        case "POST /v1/users/{userId}/balances/{currency}/debit":
            return [
                { [counter] in
                    Base(
                        path: ["userId": "u-bound", "currency": "coins"],
                        body: ["amount": .int(1), "idempotencyKey": .string("k-\(counter.next())"), "reason": "sword"])
                }
            ]
        case "POST /v1/users/{userId}/grants":
            // Fresh keys, so no probe meets another's first grant (that would be a 422, still past validation).
            return [
                { [counter] in
                    Base(
                        path: ["userId": "u-bound"],
                        body: [
                            "entitlement": "pro", "duration": "P7D", "reason": "support",
                            "idempotencyKey": .string("g-\(counter.next())"),
                        ])
                },
                { [counter] in
                    Base(
                        path: ["userId": "u-bound"],
                        body: [
                            "entitlement": "pro",
                            "until": .string(RFC3339.format(TestVectors.nowMillis + 7 * 86_400_000)),
                            "idempotencyKey": .string("g-\(counter.next())"),
                        ])
                },
            ]
        case "POST /v1/users/{userId}/app-account-token":
            // The same token for the same user every time: registered once, then 200 with nothing changed.
            return [
                { Base(path: ["userId": "u-bound"], body: ["appAccountToken": "5b0e3c1a-9f2d-4e7b-8a61-0c4d2e9f7a13"]) }
            ]
        case "GET /v1/users/{userId}/eligibility":
            // A configured subscription: a valid request is a 200, past validation.
            return [{ Base(path: ["userId": "u-bound-eligible"], query: ["productId": TestService.monthly]) }]
        case "PUT /v1/subscriptions/{originalTransactionId}/app-account-token":
            // No chain 8100998 is recorded: a valid request is a 404, past validation.
            return [
                {
                    Base(
                        path: ["originalTransactionId": "8100998"],
                        body: ["appAccountToken": "3b1f0c2e-9d8a-4c6b-8e7f-1a2b3c4d5e6f"])
                }
            ]
        case "POST /v1/users/{userId}/aliases":
            // Merged by the first probe; later ones are the same pair (200), a new alias of the user
            // (200) or the alias claimed by another user (409): all past validation.
            return [{ Base(path: ["userId": "u-bound-merged"], body: ["alias": "u-bound-anon"]) }]
        case "DELETE /v1/users/{userId}":
            // Never seen: every valid request is a 200 with nothing to erase, past validation.
            return [{ Base(path: ["userId": "u-bound-never-seen"]) }]
        case "DELETE /v1/users/{userId}/grants/{grantId}":
            // No such grant: a valid request is a 404, past validation.
            return [{ Base(path: ["userId": "u-bound", "grantId": "grt_" + String(repeating: "0", count: 32)]) }]
        case "POST /v1/offers/signatures":
            // No app has a serverAPI key here: a valid request is a 422, past validation.
            return [
                {
                    Base(body: [
                        "productId": .string(TestService.monthly), "offerId": "winback", "userId": "u-bound",
                        "transactionId": "8100001",
                    ])
                }
            ]
        case "GET /v1/admin/metrics/overview":
            // Fixed bounds around the probes' date-time (2026-12-29), so either probe stays inside the range.
            return [
                {
                    Base(query: [
                        "from": "2026-12-01T00:00:00Z", "to": "2027-02-01T00:00:00Z", "interval": "day",
                        "environment": "Sandbox",
                    ])
                }
            ]
        case "POST /v1/admin/replay":
            return [
                { Base(body: ["dryRun": .bool(true), "projections": .array(["users"])]) },
                { Base(body: ["dryRun": .bool(true), "projection": "users"]) },
            ]
        case "GET /v1/admin/webhooks/{name}/deliveries":
            return [{ Base(path: ["name": "backend"], query: ["status": "dead", "limit": "10"]) }]
        case "POST /v1/admin/webhooks/{name}/redeliver":
            return [
                { Base(path: ["name": "backend"], body: ["ids": .array(["chg_000000000000001"])]) },
                { Base(path: ["name": "backend"], body: ["status": "dead"]) },
            ]
        default:
            return nil
        }
    }

    // MARK: The test

    @Test func everyDocumentedConstraintIsWhatTheServiceEnforces() throws {
        let paths = try #require(document["paths"]?.objectValue)
        var mismatches: [String] = []
        var undocumentedStatuses: [String] = []
        var probed = 0
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            for (method, operation) in (item.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let name = "\(method.uppercased()) \(path)"
                let parameters = (operation["parameters"]?.arrayValue ?? []).map { Schema.resolve($0, document) }
                let bodySchema = operation["requestBody"]?["content"]?["application/json"]?["schema"]
                    .map { Schema.resolve($0, document) }
                guard !parameters.isEmpty || bodySchema != nil else { continue }
                guard let bases = bases(name) else {
                    mismatches.append("\(name): no valid base request in OpenAPIBoundaryTests.bases; add one")
                    continue
                }
                let documented = Set((operation["responses"]?.objectValue ?? [:]).keys)
                // Query parameters of which exactly one must be named (the document's
                // x-exactly-one-of): a probe of one names it alone, and naming none is refused.
                let exclusive = Set(operation["x-exactly-one-of"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                let client = ServiceHTTPClient(port: service.app.port, apiKey: key(for: operation))
                func send(_ base: Base, bodyOverride: [UInt8]?? = .none, probe: String, field: String?, expected: Bool)
                    throws
                {
                    let response = try client.request(
                        method.uppercased(), target(path, base),
                        body: bodyOverride ?? base.body.map { JSONValue.object($0).serialized() })
                    probed += 1
                    if !documented.contains(String(response.status)) {
                        undocumentedStatuses.append("\(name) answered \(response.status) (undocumented) to \(probe)")
                    }
                    let refused =
                        response.status == 400 && response.json["code"]?.stringValue == "invalid_request"
                        && response.headers["content-type"] == "application/problem+json"
                    if refused != !expected {
                        mismatches.append(
                            "\(name) \(probe): the document says \(expected ? "valid" : "invalid"), the service answered \(response.status) \(response.text.prefix(160))"
                        )
                    } else if refused, let field, let detail = response.json["detail"]?.stringValue,
                        !detail.contains(field)
                    {
                        mismatches.append(
                            "\(name) \(probe): refused, but the detail \"\(detail)\" does not name \(field)")
                    }
                }
                for makeBase in bases {
                    // Parameters (path and query): values are text.
                    for parameter in parameters {
                        guard let field = parameter["name"]?.stringValue, let location = parameter["in"]?.stringValue,
                            let schema = parameter["schema"].map({ Schema.resolve($0, document) })
                        else { continue }
                        var values: [String?] = Probes.values(for: schema, root: document).compactMap(Probes.text)
                        if parameter["required"]?.boolValue != true { values.append(nil) }
                        for value in Probes.unique(values) {
                            // an empty segment is another path
                            if location == "path" && (value ?? "").isEmpty { continue }
                            var base = makeBase()
                            if exclusive.contains(field) { for other in exclusive { base.query[other] = nil } }
                            if location == "path" { base.path[field] = value } else { base.query[field] = value }
                            let expected =
                                value.map { Schema.valid(Probes.typed($0, schema), schema, document) }
                                ?? (parameter["required"]?.boolValue != true && !exclusive.contains(field))
                            try send(base, probe: "\(field)=\(Probes.show(value))", field: field, expected: expected)
                        }
                    }
                    guard let bodySchema, let baseBody = makeBase().body else { continue }
                    // Body fields: every documented property, on the bases that carry it.
                    for (field, propertySchema) in (bodySchema["properties"]?.objectValue ?? [:]).sorted(by: {
                        $0.key < $1.key
                    })
                    where baseBody[field] != nil {
                        let schema = Schema.resolve(propertySchema, document)
                        let values: [JSONValue?] = Probes.values(for: schema, root: document) + [nil]
                        for value in Probes.unique(values) {
                            var base = makeBase()
                            base.body?[field] = value
                            let expected = Schema.valid(.object(base.body!), bodySchema, document)
                            try send(base, probe: "\(field)=\(Probes.show(value))", field: field, expected: expected)
                        }
                    }
                    // The object as a whole: fields the base lacks (from the other bases), an unknown
                    // field, other JSON types, and no body at all.
                    var added: [(String, JSONValue)] = bases.compactMap { $0().body }.flatMap { $0 }
                        .filter { baseBody[$0.key] == nil }.map { ($0.key, $0.value) }
                    added.append(("zzUnknownField", .bool(true)))
                    for (field, value) in added {
                        var base = makeBase()
                        base.body?[field] = value
                        try send(
                            base, probe: "+\(field)", field: nil,
                            expected: Schema.valid(.object(base.body!), bodySchema, document))
                    }
                    for other: JSONValue in [.array([]), .int(1), .string("x"), .null] {
                        try send(
                            makeBase(), bodyOverride: .some(other.serialized()), probe: "body \(Probes.show(other))",
                            field: nil,
                            expected: Schema.valid(other, bodySchema, document))
                    }
                    let bodyRequired = operation["requestBody"]?["required"]?.boolValue == true
                    try send(
                        makeBase(), bodyOverride: .some(nil), probe: "no body", field: nil, expected: !bodyRequired)
                }
            }
        }
        #expect(probed > 300, "only \(probed) probes were sent")
        #expect(mismatches.isEmpty, "\(mismatches.count) disagreements:\n\(mismatches.joined(separator: "\n"))")
        #expect(undocumentedStatuses.isEmpty, "\(undocumentedStatuses.joined(separator: "\n"))")
    }

    /// The statuses no value provokes: 401/403 for every secured operation, 400 for a body that is
    /// not JSON and 413 for one over the limit; each must be answered and documented.
    @Test func authenticationAndBodyStatusesAreAnsweredAndDocumented() throws {
        let paths = try #require(document["paths"]?.objectValue)
        var problems: [String] = []
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            for (method, operation) in (item.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let name = "\(method.uppercased()) \(path)"
                let documented = Set((operation["responses"]?.objectValue ?? [:]).keys)
                let base = bases(name)?.first?() ?? Base()
                let target = target(path, base)
                let body = base.body.map { JSONValue.object($0).serialized() }
                var expected: [(String, ServiceHTTPClient, [UInt8]?, [String: String])] = []
                if let scope = scopes(operation).first {
                    expected.append(("401", ServiceHTTPClient(port: service.app.port), body, [:]))
                    let other = scope == "read" ? "write" : "read"
                    expected.append(("403", service.client(other), body, [:]))
                }
                if operation["requestBody"] != nil {
                    let client = ServiceHTTPClient(port: service.app.port, apiKey: key(for: operation))
                    expected.append(("400", client, Array("{not json".utf8), [:]))
                }
                for (status, client, body, headers) in expected {
                    let response = try client.request(method.uppercased(), target, headers: headers, body: body)
                    if String(response.status) != status {
                        problems.append("\(name): expected \(status), got \(response.status)")
                    }
                    if !documented.contains(status) { problems.append("\(name): answers \(status), not documented") }
                }
                if operation["requestBody"] != nil {
                    // Over the limit: answered at once, and read by a client that sends it all first.
                    let client = ServiceHTTPClient(port: service.app.port, apiKey: key(for: operation))
                    let response = try client.request(
                        method.uppercased(), target, body: [UInt8](repeating: UInt8(ascii: " "), count: 2 << 20))
                    if response.status != 413 { problems.append("\(name): expected 413, got \(response.status)") }
                    if !documented.contains("413") { problems.append("\(name): answers 413, not documented") }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    // MARK: Helpers

    func scopes(_ operation: JSONValue) -> [String] {
        (operation["security"]?.arrayValue ?? []).flatMap { requirement in
            (requirement.objectValue ?? [:]).values.flatMap { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
        }
    }

    func key(for operation: JSONValue) -> String? {
        scopes(operation).first.flatMap { service.keys[$0] }
    }

    func target(_ template: String, _ base: Base) -> String {
        var path = template
        for (name, value) in base.path {
            path = path.replacingOccurrences(of: "{\(name)}", with: Probes.percentEncoded(value))
        }
        let query = base.query.sorted { $0.key < $1.key }.map { "\($0.key)=\(Probes.percentEncoded($0.value))" }
        return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.withLock {
                value += 1
                return value
            }
        }
    }
}

/// The values sent for one schema: its bounds (read from the schema) and a fixed net.
enum Probes {
    static func values(for schema: JSONValue, root: JSONValue) -> [JSONValue] {
        var out: [JSONValue] = []
        let types = Schema.types(schema) ?? []
        if types.contains("string") {
            if let min = Schema.int(schema["minLength"]) {
                if min > 0 { out.append(.string(String(repeating: "a", count: min - 1))) }
                out.append(.string(String(repeating: "a", count: min)))
            }
            if let max = Schema.int(schema["maxLength"]) {
                out += [.string(String(repeating: "a", count: max)), .string(String(repeating: "a", count: max + 1))]
            }
            if let bytes = Schema.int(schema["x-maxBytes"]) {
                // Two-byte characters: as many characters as allowed, one byte too many.
                out += [.string(twoByte(bytes)), .string(twoByte(bytes + 1))]
            }
            if schema["format"]?.stringValue == "date-time" {
                out += [
                    "2026-12-29T10:00:00.000Z", "2026-12-29T10:00:00Z", "2026-12-29T10:00:00.5+02:00", "2026-12-29",
                    "2026-13-01T00:00:00Z", "2026-12-29 10:00:00Z",
                ].map(JSONValue.string)
            }
            // The net: lengths and characters no bound was read for (skipped for encoded content,
            // whose shape the receipt tests check).
            if schema["contentMediaType"] == nil {
                out += [
                    "", "a", String(repeating: "a", count: 10), String(repeating: "a", count: 100),
                    String(repeating: "a", count: 1000), "a\u{1}b", "a\u{7F}", "\u{85}é", "a/b c%+?#",
                ].map(JSONValue.string)
            }
        }
        if types.contains("integer") {
            var bounds: [Int128] = []
            if let min = Schema.int128(schema["minimum"]) { bounds += [min - 1, min] }
            if let max = Schema.int128(schema["maximum"]) { bounds += [max, max + 1] }
            out += bounds.map { .number(String($0)) }
            let net: [Int128] = [
                -1, 0, 1, 10, 100_000, Int128(Int64.max), Int128(Int64.max) + 1, Int128(Int64.min) - 1,
            ]
            out += net.map { .number(String($0)) }
            out += [.number("1.5"), .string("abc")]
        }
        if let values = schema["enum"]?.arrayValue {
            out += values
            out.append(.string("zz-not-in-the-enum"))
        }
        if types.contains("array"), let items = schema["items"].map({ Schema.resolve($0, root) }) {
            let sample = (items["enum"]?.arrayValue?.first) ?? .string("a")
            if let min = Schema.int(schema["minItems"]) {
                if min > 0 { out.append(.array(Array(repeating: sample, count: min - 1))) }
                out.append(.array(Array(repeating: sample, count: min)))
            }
            out += values(for: items, root: root).map { .array([$0]) }
            out.append(.array([]))
        }
        if types.contains("boolean") { out += [.bool(true), .bool(false)] }
        // Wrong JSON types (dropped for parameters, which are text).
        let wrong: [(String, JSONValue)] = [
            ("null", .null), ("boolean", .bool(true)), ("string", .string("1")),
            ("integer", .int(1)), ("array", .array([])), ("object", .object([:])),
        ]
        for (type, value) in wrong where !types.contains(type) && !(type == "integer" && types.contains("number")) {
            out.append(value)
        }
        return out
    }

    static func twoByte(_ bytes: Int) -> String {
        String(repeating: "é", count: bytes / 2) + String(repeating: "a", count: bytes % 2)
    }

    /// A probe as parameter text (nil: not expressible in a URL).
    static func text(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(let lexeme): lexeme
        default: nil
        }
    }

    /// Parameter text as the JSON value the schema judges: integers are numbers when they look like one.
    static func typed(_ text: String, _ schema: JSONValue) -> JSONValue {
        let types = Schema.types(schema) ?? []
        if types.contains("integer") || types.contains("number"),
            text.range(of: #"^-?[0-9]+(\.[0-9]+)?$"#, options: .regularExpression) != nil
        {
            return .number(text)
        }
        return .string(text)
    }

    static func unique<T>(_ values: [T?]) -> [T?] {
        var seen: Set<String> = []
        return values.filter { seen.insert(show($0)).inserted }
    }

    static func show<T>(_ value: T?) -> String {
        guard let value else { return "(absent)" }
        let text = (value as? JSONValue).map { String(decoding: $0.serialized(), as: UTF8.self) } ?? "\"\(value)\""
        return text.count > 40 ? "\(text.prefix(24))…(\(text.count) chars)" : text
    }

    static func percentEncoded(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}

/// The part of JSON Schema 2020-12 the document uses, evaluated independently of the service.
enum Schema {
    static func resolve(_ schema: JSONValue, _ root: JSONValue) -> JSONValue {
        guard let reference = schema["$ref"]?.stringValue, reference.hasPrefix("#/") else { return schema }
        var node = root
        for part in reference.dropFirst(2).split(separator: "/") { node = node[String(part)] ?? .null }
        return resolve(node, root)
    }

    static func types(_ schema: JSONValue) -> [String]? {
        if let one = schema["type"]?.stringValue { return [one] }
        return schema["type"]?.arrayValue?.compactMap(\.stringValue)
    }

    static func int(_ value: JSONValue?) -> Int? { value?.int64Value.map { Int($0) } }

    static func int128(_ value: JSONValue?) -> Int128? {
        guard case .number(let lexeme)? = value else { return nil }
        return Int128(lexeme)
    }

    static func isIntegerLexeme(_ lexeme: String) -> Bool {
        !lexeme.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
    }

    static func matches(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("boolean", .bool), ("array", .array), ("object", .object), ("null", .null),
            ("number", .number):
            true
        case ("integer", .number(let lexeme)): isIntegerLexeme(lexeme)
        default: false
        }
    }

    static func valid(_ value: JSONValue, _ schemaOrReference: JSONValue, _ root: JSONValue) -> Bool {
        let schema = resolve(schemaOrReference, root)
        if let types = types(schema), !types.contains(where: { matches(value, $0) }) { return false }
        if let allowed = schema["enum"]?.arrayValue, !allowed.contains(where: { $0.serialized() == value.serialized() })
        {
            return false
        }
        switch value {
        case .string(let text):
            let characters = text.unicodeScalars.count
            if let min = int(schema["minLength"]), characters < min { return false }
            if let max = int(schema["maxLength"]), characters > max { return false }
            if let bytes = int(schema["x-maxBytes"]), text.utf8.count > bytes { return false }
            if let pattern = schema["pattern"]?.stringValue {
                guard let regex = try? NSRegularExpression(pattern: pattern),
                    regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                else { return false }
            }
            if schema["format"]?.stringValue == "date-time", !isDateTime(text) { return false }
            // An instant that must lie ahead (a grant's until): judged against the wall clock, as
            // the service's TestClock (not advanced here) judges it.
            if schema["x-futureInstant"]?.boolValue == true, let instant = RFC3339.parse(text),
                instant <= TestVectors.nowMillis
            {
                return false
            }
            if schema["contentEncoding"]?.stringValue == "base64", !isBase64(text) { return false }
        case .number(let lexeme):
            if let n = Int128(lexeme) {
                if let min = int128(schema["minimum"]), n < min { return false }
                if let max = int128(schema["maximum"]), n > max { return false }
            } else if let n = Double(lexeme) {
                if let min = schema["minimum"]?.doubleValue, n < min { return false }
                if let max = schema["maximum"]?.doubleValue, n > max { return false }
            }
        case .array(let items):
            if let min = int(schema["minItems"]), items.count < min { return false }
            if let max = int(schema["maxItems"]), items.count > max { return false }
            if let itemSchema = schema["items"], !items.allSatisfy({ valid($0, itemSchema, root) }) { return false }
        case .object(let members):
            let required = schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? []
            if !required.allSatisfy({ members[$0] != nil }) { return false }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (key, member) in members {
                if let propertySchema = properties[key] {
                    if !valid(member, propertySchema, root) { return false }
                } else if schema["additionalProperties"]?.boolValue == false {
                    return false
                }
            }
        default:
            break
        }
        if let choices = schema["oneOf"]?.arrayValue, choices.filter({ valid(value, $0, root) }).count != 1 {
            return false
        }
        return true
    }

    /// RFC 3339 date-time (section 5.6), with field ranges.
    static func isDateTime(_ text: String) -> Bool {
        text.range(
            of:
                #"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"#,
            options: .regularExpression) != nil
    }

    /// RFC 4648 base64 (padding optional), by Foundation's decoder.
    static func isBase64(_ text: String) -> Bool {
        guard !text.isEmpty, text.count % 4 != 1 else { return false }
        return Data(base64Encoded: text + String(repeating: "=", count: (4 - text.count % 4) % 4)) != nil
    }
}
