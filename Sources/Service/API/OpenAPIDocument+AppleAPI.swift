import Infrastructure

extension OpenAPIDocument {
    /// The operations that ask Apple's App Store Server API (api.md §5) and read the analytics
    /// projection (the overview, §6): a part of `paths`, kept apart so no file grows past a page.
    static let applePaths: String = #"""
            "/v1/users/{userId}/sync": {
              "post": {
                "summary": "Restore or import the user's purchases from Apple: the whole history of the customer who made transactionId (Get Transaction History, every page, and Get All Subscription Statuses), verified and recorded as ingestion does",
                "security": [{"bearer": ["write"]}],
                "parameters": [{"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                  "type": "object",
                  "description": "Exactly one of transactionId and receipt. Other fields are ignored.",
                  "oneOf": [{"required": ["transactionId"]}, {"required": ["receipt"]}],
                  "properties": {
                    "transactionId": {"type": "string", "pattern": "^[0-9]{1,64}$", "description": "Any transaction id of the customer (StoreKit's Transaction.id)."},
                    "receipt": {"type": "string", "minLength": 1, "contentEncoding": "base64", "contentMediaType": "application/pkcs7-mime", "description": "A StoreKit 1 app receipt: the transaction id of its first in-app purchase is read locally, as Apple's ReceiptUtility reads it (no verifyReceipt). Not a receipt: 400; no in-app purchase in it: 422 verification_failed."}
                  }
                }}}},
                "responses": {
                  "200": {"description": "Recorded, in the shape of POST /v1/purchases, with bundleId, environment and fetched (signed items Apple answered)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PurchaseResponse"}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "apple_rejected (with appleErrorCode, e.g. 4040010: Apple does not know the transaction), verification_failed, or server_api_not_configured"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable: Apple could not be reached (retried, bounded); nothing was recorded"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/lookup": {
              "get": {
                "summary": "Support lookup (api.md §7): the user and chain behind a transactionId, an originalTransactionId, an appAccountToken or the order ID of the customer's App Store e-mail receipt. An order ID is asked of Apple's Look Up Order ID (each app with a serverAPI key; Production, then Sandbox on 4040010) and the order's signed transactions are verified and recorded as sync records them, for nobody (a registered appAccountToken still claims), before the answer",
                "description": "Name exactly one of the four parameters (else 400). userId null: the chain is unclaimed (or the token is registered to nobody). originalTransactionId null: a registered appAccountToken no recorded transaction carries yet. For an appAccountToken, userId is the user it is registered to, else the owner of the chain carrying it; the chain is the one of the latest recorded transaction carrying it.",
                "security": [{"bearer": ["read"]}],
                "x-exactly-one-of": ["transactionId", "originalTransactionId", "appAccountToken", "orderId"],
                "parameters": [
                  {"name": "transactionId", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9]{1,64}$"}, "description": "Any recorded transaction (a renewal's too)."},
                  {"name": "originalTransactionId", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9]{1,64}$"}, "description": "A recorded chain."},
                  {"name": "appAccountToken", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"}, "description": "A UUID, compared case-insensitively."},
                  {"name": "orderId", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[A-Za-z0-9]{1,64}$"}, "description": "The order ID of the App Store e-mail receipt (e.g. MK5TTTVWJH)."}
                ],
                "responses": {
                  "200": {"description": "Found", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["userId", "originalTransactionId"],
                    "properties": {
                      "userId": {"type": ["string", "null"], "description": "The chain's owner (or the token's user); null: nobody's."},
                      "originalTransactionId": {"type": ["string", "null"]},
                      "transactionId": {"type": "string", "description": "Only when a transactionId was named: it, again."},
                      "orderId": {"type": "string", "description": "Order lookups only, with bundleId, environment and transactions; userId and originalTransactionId are then those of the order's first transaction."},
                      "bundleId": {"type": "string"},
                      "environment": {"type": "string", "description": "Where Apple found the order."},
                      "transactions": {"type": "array", "description": "The order's transactions in Apple's order.", "items": {
                        "type": "object", "required": ["transactionId", "originalTransactionId", "userId", "recorded"],
                        "properties": {
                          "transactionId": {"type": "string"}, "originalTransactionId": {"type": "string"},
                          "userId": {"type": ["string", "null"]},
                          "recorded": {"type": "boolean", "description": "false: a duplicate, the log had it."}
                        }
                      }}
                    }
                  }}}},
                  "400": {"$ref": "#/components/responses/Problem", "description": "invalid_request: not exactly one parameter, or one not in its form"},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem", "description": "not_found: nothing recorded matches (an order ID: Apple answered status 1, invalid, for every app)"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict (order lookups): concurrent writers kept winning over the retries; retry"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "order lookups: apple_rejected, verification_failed, or server_api_not_configured"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable (order lookups): nothing was recorded"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/offers/signatures": {
              "post": {
                "summary": "Sign a promotional offer with the app's App Store Server API key: the V2 JWS and the legacy signature, as Apple's library makes them",
                "security": [{"bearer": ["write"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OfferSignatureRequest"}}}},
                "responses": {
                  "200": {"description": "Signed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OfferSignatureResponse"}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "server_api_not_configured: the signing app has no serverAPI key (or none can be chosen)"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/reconcile": {
              "post": {
                "summary": "Ask Apple's Get Notification History (every page, per app with a serverAPI key and per store environment it accepts) for the notifications sent in a window, and record those that never reached this service, verified as POST /v1/notifications/apple verifies them",
                "security": [{"bearer": ["admin"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "description": "{\"since\": RFC 3339 (required; within the last 180 days, which is what Apple keeps), \"until\": RFC 3339 (default now; after since), \"bundleId\": one app, \"environment\": \"Production\", \"Sandbox\" or \"LocalTesting\" (the test store's stand-in)}; anything else in them is a 400."}}}},
                "responses": {
                  "200": {"description": "What was found", "content": {"application/json": {"schema": {"type": "object", "required": ["fetched", "recorded", "duplicates", "rejected"], "properties": {"fetched": {"type": "integer"}, "recorded": {"type": "integer"}, "duplicates": {"type": "integer"}, "rejected": {"type": "integer", "description": "Did not verify: never recorded."}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "413": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: concurrent writers kept winning over the retries; nothing recorded, retry"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "apple_rejected, or server_api_not_configured"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/apple/test-notification": {
              "post": {
                "summary": "Ask Apple (Request a Test Notification, with the app's serverAPI key) to send a TEST notification to the URL set in App Store Connect: the \"is my notification URL right?\" check; follow it with GET …/test-notification/{token}",
                "security": [{"bearer": ["admin"]}],
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestNotificationTarget"}}}},
                "responses": {
                  "200": {"description": "Apple will send it", "content": {"application/json": {"schema": {"type": "object", "required": ["testNotificationToken", "bundleId", "environment"], "properties": {"testNotificationToken": {"type": "string"}, "bundleId": {"type": "string"}, "environment": {"type": "string", "enum": ["Production", "Sandbox", "LocalTesting"]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "unknown_app (bundleId not configured), wrong_environment (not accepted by the app), server_api_not_configured, or apple_rejected (with appleErrorCode)"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/apple/test-notification/{token}": {
              "get": {
                "summary": "Apple's delivery status of a test notification (Get Test Notification Status) and whether this service recorded it: Apple's signedPayload is verified exactly as POST /v1/notifications/apple verifies it, and its notificationUUID looked up in the event log. Apple is asked in the app and environment that asked for the token (the service remembers them in its database when the POST gets the token, so any instance answers without being told). With the test store (testkit apple) the test store plays Apple: it sends the TEST notification, signed by its CA, to the service's POST /v1/notifications/apple and reports that attempt",
                "security": [{"bearer": ["admin"]}],
                "parameters": [
                  {"name": "token", "in": "path", "required": true, "description": "The testNotificationToken the POST answered.", "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9_-]+$"}},
                  {"name": "bundleId", "in": "query", "required": false, "description": "Not needed for a token this service asked for (it remembers the app). Otherwise required when several apps have a serverAPI key.", "schema": {"$ref": "#/components/schemas/Identifier"}},
                  {"name": "environment", "in": "query", "required": false, "description": "Not needed for a token this service asked for (it remembers the environment); when given, it wins. Otherwise required when the app accepts more than one environment (400 saying this service has no record of the token).", "schema": {"type": "string", "enum": ["Production", "Sandbox", "LocalTesting"]}}
                ],
                "responses": {
                  "200": {"description": "Apple's attempts and whether the TEST notification is in the log", "content": {"application/json": {"schema": {"type": "object", "required": ["sendAttempts", "recorded"], "properties": {"sendAttempts": {"type": "array", "items": {"type": "object", "properties": {"attemptDate": {"type": ["string", "null"], "format": "date-time"}, "sendAttemptResult": {"type": ["string", "null"], "description": "Apple's word: SUCCESS, TIMED_OUT, TLS_ISSUE, CIRCULAR_REDIRECT, NO_RESPONSE, SOCKET_ISSUE, UNSUPPORTED_CHARSET, INVALID_RESPONSE, PREMATURE_CLOSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, OTHER"}}}}, "recorded": {"type": "boolean", "description": "This service's event log holds the TEST notification Apple reports (false also while Apple's answer names none)."}, "notificationUUID": {"type": ["string", "null"], "description": "The TEST notification's, from Apple's verified signedPayload; null when Apple's answer carries none."}, "bundleId": {"type": "string"}, "environment": {"type": "string", "enum": ["Production", "Sandbox", "LocalTesting"]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "unknown_app, wrong_environment, server_api_not_configured, or apple_rejected (appleErrorCode 4040008: Apple knows no such token)"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable, also when Apple's signedPayload does not verify (nothing in it is trusted)"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/catalog/unconfigured": {
              "get": {
                "summary": "Products bought but missing from the catalog in force (api.md §1): recorded anyway, granting the entitlement (or crediting the balance) named by their own product id. Read from the analytics projection, so every instance answers the same and a restart forgets nothing; it follows the log within a moment. The console shows a warning banner while the list is not empty; the log warns once per product per process and iap_unconfigured_product_transactions_total{bundleId,productId} counts them",
                "security": [{"bearer": ["admin"]}],
                "responses": {
                  "200": {"description": "The products, first seen first (empty: every product bought is configured)", "content": {"application/json": {"schema": {"type": "object", "required": ["products"], "properties": {
                    "products": {"type": "array", "items": {"type": "object", "required": ["bundleId", "productId", "firstSeen", "lastSeen", "transactions", "users"], "properties": {
                      "bundleId": {"type": "string"}, "productId": {"type": "string"},
                      "firstSeen": {"type": "string", "format": "date-time", "description": "When the first of its transactions was recorded"},
                      "lastSeen": {"type": "string", "format": "date-time", "description": "When the last of its transactions (or of their re-signed versions: a refund, a renewal) was recorded"},
                      "transactions": {"type": "integer", "minimum": 1, "description": "Its transactions recorded (each once, however often Apple re-signed it)"},
                      "users": {"type": "integer", "minimum": 0, "description": "Distinct users owning their chains (a chain nobody claimed yet counts no user)"}
                    }}},
                    "catalogVersion": {"type": "integer", "description": "The catalog version (api.md §1.1) the list was judged against"}
                  }}}}},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/metrics/overview": {
              "get": {
                "summary": "The console's charts, from the analytics projection: per bucket (UTC day, ISO week, calendar month, starting at t) active auto-renewable subscriptions and MRR per currency (milliunits; each paid period's price normalised to a month by its billing period: the catalog's period, else its length snapped to the nearest of P1W, P1M, P2M, P3M, P6M, P1Y, Sandbox by Apple's accelerated table; free trials and billing retry add 0, grace period counts) at the bucket's end, and new / churned / refunded in it; one store environment per answer, never mixed",
                "security": [{"bearer": ["admin"]}],
                "parameters": [
                  {"name": "from", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "Default: 30 days before to."},
                  {"name": "to", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "Default: now (asOf when given); after from; at most 400 buckets from from."},
                  {"name": "interval", "in": "query", "required": false, "schema": {"type": "string", "enum": ["day", "week", "month"], "default": "day"}},
                  {"name": "environment", "in": "query", "required": false, "schema": {"type": "string", "enum": ["Production", "Sandbox", "Xcode", "LocalTesting"], "default": "Production"}, "description": "The one store environment every figure is of (they are never summed across environments); anything else is a 400."},
                  {"name": "currency", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[A-Z]{3}$"}, "description": "A reporting currency (ISO 4217): every money series (mrr, revenue, refunds, proceeds) converted into it at the latest rate on or before each amount's day (MRR at each bucket's end), from the rates `iap-ledger fx import` recorded; amounts in a currency without a rate are left out and listed in unconverted. Without it each currency is its own series."},
                  {"name": "asOf", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "Answer as the overview did at this instant: from the transactions, renewal infos and exchange rates recorded up to it, statuses judged then (later refunds, renewals, purchases and rate imports change nothing)."}
                ],
                "responses": {
                  "200": {"description": "The series", "content": {"application/json": {"schema": {"type": "object", "required": ["from", "to", "interval", "environment", "currency", "asOf", "unconverted", "series"], "properties": {"from": {"type": "string", "format": "date-time"}, "to": {"type": "string", "format": "date-time"}, "interval": {"type": "string"}, "environment": {"type": "string", "enum": ["Production", "Sandbox", "Xcode", "LocalTesting"], "description": "The environment the figures are of (echoed)"}, "currency": {"type": ["string", "null"], "description": "The reporting currency the money series are in (echoed); null: each currency its own"}, "asOf": {"type": ["string", "null"], "format": "date-time", "description": "The instant whose recorded facts and rates the figures are of (echoed); null: everything recorded"}, "unconverted": {"type": "array", "items": {"type": "string"}, "description": "Currencies of amounts left out for want of a rate into currency (never guessed)"}, "series": {"type": "object", "required": ["activeSubscriptions", "mrr", "new", "churned", "refunded", "revenue", "refunds", "proceeds", "trialsStarted", "trialsConverted"], "properties": {"activeSubscriptions": {"$ref": "#/components/schemas/OverviewSeries"}, "mrr": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/OverviewSeries"}}, "new": {"$ref": "#/components/schemas/OverviewSeries"}, "churned": {"$ref": "#/components/schemas/OverviewSeries"}, "refunded": {"$ref": "#/components/schemas/OverviewSeries"}, "revenue": {"type": "object", "description": "Per currency, milliunits: the charges of each bucket (analytics.revenue_movements)", "additionalProperties": {"$ref": "#/components/schemas/OverviewSeries"}}, "refunds": {"type": "object", "description": "Per currency, milliunits, positive: the refunds made in each bucket (prorated at their share; a reversal subtracts)", "additionalProperties": {"$ref": "#/components/schemas/OverviewSeries"}}, "proceeds": {"type": "object", "description": "Per currency, milliunits: estimated proceeds of each bucket's charges and refunds, after Apple's commission", "additionalProperties": {"$ref": "#/components/schemas/OverviewSeries"}}, "trialsStarted": {"$ref": "#/components/schemas/OverviewSeries"}, "trialsConverted": {"$ref": "#/components/schemas/OverviewSeries"}}}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
        """#
}
