import Infrastructure

/// The OpenAPI 3.1 description of the whole HTTP API, served at `GET /openapi.json`.
/// `OpenAPITests` keeps it true: every route the router knows is here and vice versa; and
/// `OpenAPIBoundaryTests` sends every constraint's boundary values (read from this document) to a
/// running service and checks that it accepts and refuses exactly what this says; and
/// `OpenAPIAnswersTests` drives every operation (grants, the change feed, Apple's Server API
/// stand-in included) and validates each real answer's status and body against it. `x-maxBytes` is
/// a length in UTF-8 bytes (what the service counts), next to `maxLength` in characters;
/// `x-futureInstant` marks a date-time that must be later than the request's instant.
public enum OpenAPIDocument {
    public static let json: String = header + "\n" + components + "\n" + paths

    /// The document's opening: version, info and servers.
    static let header: String = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "iap-ledger",
            "version": "1.0.0",
            "description": "Self-hosted, event-sourced entitlement service for App Store in-app purchases. Times are RFC 3339 UTC with milliseconds. Errors are application/problem+json with a stable `code`. Any route answers 413 `payload_too_large` to a body over 1 MiB (read to the end or after a bounded lingering close, so the client can read the answer), 431 to a request head over 32 KiB, and 405 `method_not_allowed` (with `Allow`) to a method its path does not have. A value outside a documented constraint is refused with 400 `invalid_request` naming the field."
          },
          "servers": [{"url": "http://127.0.0.1:8080"}],
        """#

    /// Every operation, by path.
    static let paths: String = pathsHead + "\n" + applePaths + "\n" + identityPaths + "\n" + pathsTail

    /// The operations on users, purchases, notifications, changes and subscriptions.
    static let pathsHead: String = #"""
          "paths": {
            "/v1/purchases": {
              "post": {
                "summary": "Record a purchase forwarded by a backend (StoreKit 2 JWS or StoreKit 1 receipt)",
                "security": [{"bearer": ["write"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PurchaseRequest"}}}},
                "responses": {
                  "200": {"description": "Recorded or duplicate", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PurchaseResponse"}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"}, "422": {"$ref": "#/components/responses/Problem"},
                  "502": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/notifications/apple": {
              "post": {
                "summary": "App Store Server Notifications V2 endpoint (no API key; only Apple-signed payloads get in)",
                "security": [],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["signedPayload"], "description": "Other fields are ignored.", "properties": {"signedPayload": {"type": "string", "minLength": 1, "description": "App Store Server Notification V2 (JWS); one that does not verify is a 422."}}}}}},
                "responses": {
                  "200": {"description": "Recorded or duplicate", "content": {"application/json": {"schema": {"type": "object", "properties": {"notificationUUID": {"type": "string"}, "result": {"type": "string", "enum": ["recorded", "duplicate"]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/events": {
              "get": {
                "summary": "The user's history, oldest first (newest first with before)",
                "security": [{"bearer": ["read"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}},
                  {"name": "after", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "maximum": 9223372036854775807, "default": 0}, "description": "Only events with a greater seq (the previous page's next)."},
                  {"name": "before", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 9223372036854775807}, "description": "Newest first: only events with a smaller seq (9223372036854775807 for the latest page, then the previous page's next); with after too, only seqs between the two."},
                  {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}
                ],
                "responses": {
                  "200": {"description": "Events", "content": {"application/json": {"schema": {"type": "object", "properties": {"events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}, "next": {"type": ["integer", "null"]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/changes": {
              "get": {
                "summary": "The change feed, oldest first (api.md §4)",
                "security": [{"bearer": ["read"]}],
                "parameters": [
                  {"name": "after", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9]+-[0-9]+$"}, "description": "A change's cursor or a page's next; without it, from the beginning. Anything else is a 400."},
                  {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
                  {"name": "wait", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "maximum": 60, "default": 0}, "description": "Seconds an empty page waits for the next change before it is answered empty."},
                  {"name": "userId", "in": "query", "required": false, "schema": {"$ref": "#/components/schemas/UserId"}, "description": "Only this user's changes."}
                ],
                "responses": {
                  "200": {"description": "A page", "content": {"application/json": {"schema": {"type": "object", "required": ["changes", "next"], "properties": {"changes": {"type": "array", "items": {"$ref": "#/components/schemas/Change"}}, "next": {"type": "string", "description": "Never null: on an empty page, the after given."}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/subscriptions/{originalTransactionId}": {
              "get": {
                "summary": "One transaction chain: owner, state, every transaction and renewal info recorded",
                "security": [{"bearer": ["read"]}],
                "parameters": [{"name": "originalTransactionId", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}}],
                "responses": {
                  "200": {"description": "The chain", "content": {"application/json": {"schema": {"type": "object"}}}},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/subscriptions/{originalTransactionId}/extend": {
              "post": {
                "summary": "Extend an auto-renewable subscription's renewal date through Apple's Extend a Subscription Renewal Date, in the environment the chain lives in, with its app's serverAPI key. Every outcome is recorded (a RenewalExtensionRequested event on the chain); when Apple extended it, the chain's status is fetched and recorded at once (refreshed), so the answer and every read after it show the new expiresAt. With the test store (testkit apple) the test store plays Apple: it moves the chain's current period by the days asked (once per requestId), answers the new expiry to the read-back and sends RENEWAL_EXTENDED",
                "security": [{"bearer": ["admin"]}],
                "parameters": [{"name": "originalTransactionId", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["days", "requestId"], "additionalProperties": false, "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 90}, "reason": {"type": "integer", "minimum": 0, "maximum": 3, "default": 0, "description": "Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage"}, "requestId": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[^\\u0000-\\u001f\\u007f]*$", "description": "Apple's requestIdentifier: the same id again is not a second extension"}}}}}},
                "responses": {
                  "200": {"description": "Apple's answer", "content": {"application/json": {"schema": {"type": "object", "required": ["originalTransactionId", "success", "outcome", "requestId", "days", "reason", "refreshed", "customer"], "properties": {"originalTransactionId": {"type": "string"}, "success": {"type": "boolean"}, "outcome": {"type": "string", "enum": ["accepted", "refused"]}, "requestId": {"type": "string"}, "days": {"type": "integer"}, "reason": {"type": "integer"}, "environment": {"type": "string"}, "effectiveDate": {"type": "string", "format": "date-time"}, "webOrderLineItemId": {"type": "string"}, "refreshed": {"type": "boolean", "description": "The chain's new status was fetched from Apple and recorded"}, "customer": {"oneOf": [{"$ref": "#/components/schemas/Customer"}, {"type": "null"}], "description": "The chain owner's document after the read-back (its expiresAt moved when refreshed); null while nobody has claimed the chain."}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "apple_rejected (with appleErrorCode), not_auto_renewable, or server_api_not_configured"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable (the attempt is recorded)"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/balances/{currency}/debit": {
              "post": {
                "summary": "Spend from a balance, idempotently; never below zero",
                "security": [{"bearer": ["write"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}},
                  {"name": "currency", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 64, "x-maxBytes": 64, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "The balance's name: 1–64 bytes of UTF-8, no control characters."}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DebitRequest"}}}},
                "responses": {
                  "200": {"description": "Debited or duplicate", "content": {"application/json": {"schema": {"type": "object", "properties": {"userId": {"type": "string", "description": "Only when the id named is an alias (api.md §7): the user debited"}, "balance": {"type": "integer"}, "result": {"type": "string", "enum": ["debited", "duplicate"]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "idempotency_key_reused: the key named another amount or currency"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/app-account-token": {
              "post": {
                "summary": "The user's appAccountToken for StoreKit (api.md §7): minted once, or a token the app already uses registered; recorded as an event. A transaction, renewal or notification carrying a registered token belongs to its user: a chain nobody claimed yet is claimed by them at once",
                "security": [{"bearer": ["write"]}],
                "parameters": [{"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}}],
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AppAccountTokenRequest"}}}},
                "responses": {
                  "200": {"description": "The token (minted, registered, or the user's already)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AppAccountTokenResponse"}}}},
                  "400": {"$ref": "#/components/responses/Problem", "description": "invalid_request: not a UUID, or an unknown field"},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "app_account_token_taken: the token is registered to another user (who is not named); or conflict: concurrent writers kept winning over the retries"},
                  "413": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/grants": {
              "post": {
                "summary": "Give the user an entitlement for a while (a promotional grant, api.md §6), recorded as an event: the entitlement shows source promotional while the grant reaches furthest, ends by time like a subscription period, and the change feed says PROMOTIONAL_GRANT",
                "description": "Idempotency: the body's idempotencyKey or the Idempotency-Key header (1–200 bytes, no control characters).",
                "security": [{"bearer": ["admin"]}],
                "parameters": [{"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GrantRequest"}}}},
                "responses": {
                  "201": {"description": "Granted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GrantResponse"}}}},
                  "200": {"description": "The idempotency key's first grant, answered again; nothing recorded", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GrantResponse"}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "413": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "idempotency_key_reused: the key made a grant with another entitlement, duration/until or reason (grantId says which)"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/grants/{grantId}": {
              "delete": {
                "summary": "Revoke a promotional grant now (PROMOTIONAL_REVOKE); its entitlement stays listed with active false unless something else gives it. A revoked or lapsed grant again: 200, nothing recorded",
                "security": [{"bearer": ["admin"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}},
                  {"name": "grantId", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^grt_[0-9a-f]{32}$"}}
                ],
                "responses": {
                  "200": {"description": "Revoked (or already ended)", "content": {"application/json": {"schema": {"type": "object", "required": ["customer"], "properties": {"customer": {"$ref": "#/components/schemas/Customer"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem", "description": "not_found: this user has no grant with this id"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
        """#

    /// The operations that operate the service (replay, projections, webhooks) and the console.
    static let pathsTail: String = #"""
            "/v1/admin/replay": {
              "post": {
                "summary": "Rebuild every projection from the log under the recorded catalog in force (or report what would change); 409 while another replay runs or when a new catalog version was recorded meanwhile",
                "security": [{"bearer": ["admin"]}],
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReplayRequest"}}}},
                "responses": {
                  "200": {"description": "Report", "content": {"application/json": {"schema": {"type": "object", "properties": {"events": {"type": "integer"}, "changedUsers": {"type": "array", "items": {"type": "object", "properties": {"userId": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}, "before": {"type": ["object", "null"]}, "after": {"type": ["object", "null"]}}}}, "changedUserCount": {"type": "integer"}, "durationMs": {"type": "integer"}, "eventsPerSecond": {"type": "integer"}, "dryRun": {"type": "boolean"}, "swapped": {"type": "boolean"}, "catchUpEvents": {"type": "integer"}, "users": {"type": "integer"}, "changedChainOwners": {"type": "integer"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/projections": {
              "get": {
                "summary": "Each projection's version, position and lag; which instance runs each background job",
                "security": [{"bearer": ["admin"]}],
                "responses": {
                  "200": {"description": "Projections", "content": {"application/json": {"schema": {"type": "object", "properties": {"head": {"type": "integer"}, "projections": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "mode": {"type": "string", "enum": ["inline", "async"]}, "version": {"type": "integer"}, "builtVersion": {"type": ["integer", "null"]}, "position": {"type": "integer"}, "lag": {"type": "integer"}, "updatedAt": {"type": ["string", "null"]}}}}, "instance": {"type": "string", "description": "The instance that answered (IAP_LEDGER_INSTANCE, default <hostname>:<port>:<pid>)."}, "leases": {"type": "array", "description": "One per background job some instance holds or last held (ops.leases): change-clock, analytics-projector, webhooks:<endpoint>, reconciler, consumption-responder, replay.", "items": {"type": "object", "properties": {"name": {"type": "string"}, "holder": {"type": "string", "description": "The holding instance's name"}, "token": {"type": "integer", "description": "Fencing token: bigger at each change of holder"}, "since": {"type": "string", "format": "date-time", "description": "When this holder took it"}, "renewedAt": {"type": "string", "format": "date-time"}, "expiresAt": {"type": "string", "format": "date-time", "description": "Free after this unless renewed (a dead holder's lease runs out within 6 s)"}, "expired": {"type": "boolean", "description": "True: its holder stopped renewing (died); the next instance to ask takes it"}, "heldHere": {"type": "boolean", "description": "The instance that answered holds it and runs the job"}}}}}}}}},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/webhooks": {
              "get": {
                "summary": "Each configured webhook endpoint: deliveries by status and the age of the oldest not yet delivered nor dead",
                "security": [{"bearer": ["admin"]}],
                "responses": {
                  "200": {"description": "Endpoints", "content": {"application/json": {"schema": {"type": "object", "properties": {"endpoints": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "url": {"type": "string"}, "counts": {"type": "object", "properties": {"pending": {"type": "integer"}, "delivered": {"type": "integer"}, "failed": {"type": "integer"}, "dead": {"type": "integer"}}}, "oldestPendingSeconds": {"type": "integer", "description": "0 when nothing is pending or failed"}}}}}}}}},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/webhooks/{name}/deliveries": {
              "get": {
                "summary": "An endpoint's deliveries, newest first, each with every attempt (time, HTTP status or error, duration); 404 not_found for an endpoint the config does not name",
                "security": [{"bearer": ["admin"]}],
                "parameters": [
                  {"name": "name", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}},
                  {"name": "status", "in": "query", "required": false, "schema": {"type": "string", "enum": ["pending", "delivered", "failed", "dead"]}},
                  {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}
                ],
                "responses": {
                  "200": {"description": "Deliveries", "content": {"application/json": {"schema": {"type": "object", "properties": {"endpoint": {"type": "string"}, "deliveries": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string", "description": "the change id, also the webhook-id header"}, "userId": {"type": ["string", "null"]}, "status": {"type": "string", "enum": ["pending", "delivered", "failed", "dead"]}, "attemptCount": {"type": "integer"}, "queuedAt": {"type": "string", "format": "date-time"}, "nextAttemptAt": {"type": ["string", "null"], "format": "date-time"}, "deliveredAt": {"type": ["string", "null"], "format": "date-time"}, "attempts": {"type": "array", "items": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}, "httpStatus": {"type": ["integer", "null"]}, "error": {"type": ["string", "null"]}, "durationMs": {"type": "integer"}}}}}}}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/webhooks/{name}/redeliver": {
              "post": {
                "summary": "Queue deliveries again (due now, retry schedule from the start): the changes named by id (a change the endpoint never had is queued too, if its filters take it), or every delivery in a status",
                "security": [{"bearer": ["admin"]}],
                "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {"ids": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"type": "string", "pattern": "^chg_[0-9]+$"}}, "status": {"type": "string", "enum": ["dead", "failed"]}}, "oneOf": [{"required": ["ids"]}, {"required": ["status"]}]}}}},
                "responses": {
                  "200": {"description": "Queued", "content": {"application/json": {"schema": {"type": "object", "properties": {"queued": {"type": "integer"}, "notQueued": {"type": "array", "items": {"type": "string"}, "description": "ids not in the feed, or not taken by the endpoint's filters"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "413": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/healthz": {"get": {"summary": "200 while the process runs", "security": [], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["ok"]}}}}}}}}},
            "/readyz": {"get": {"summary": "200 when PostgreSQL is reachable and this instance's code is not older than the database's projections, else 503 (store_unavailable or projection_version_ahead; draining after SIGTERM with IAP_LEDGER_DRAIN_SECONDS)", "security": [], "responses": {"200": {"description": "Ready", "content": {"application/json": {"schema": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["ready"]}}}}}}, "503": {"$ref": "#/components/responses/Problem"}}}},
            "/metrics": {"get": {"summary": "Prometheus text format", "security": [], "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"summary": "This document", "security": [], "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/console": {"get": {"summary": "The web console (api.md §6): a static page that asks for an API key and calls this API with it", "security": [], "responses": {"200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}, "304": {"description": "Not modified (If-None-Match)"}}}},
            "/console/{asset}": {"get": {"summary": "The console's scripts, stylesheet and icon", "security": [], "parameters": [{"name": "asset", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {"200": {"description": "The asset"}, "304": {"description": "Not modified (If-None-Match)"}, "404": {"$ref": "#/components/responses/Problem"}}}}
          }
        }
        """#
}
