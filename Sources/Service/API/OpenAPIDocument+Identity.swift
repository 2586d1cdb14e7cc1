import Infrastructure

extension OpenAPIDocument {
    /// The user's document and its erasure, the identity operations of api.md §7 that merge ids,
    /// and §8's Set App Account Token: a part of `paths`, kept apart so no file grows past a page.
    static let identityPaths: String = #"""
            "/v1/users/{userId}": {
              "get": {
                "summary": "The user's entitlements, subscriptions, non-consumables and balances",
                "security": [{"bearer": ["read"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}},
                  {"name": "asOf", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "The document as it would have been answered at that instant, from the events recorded up to it, under the catalog version in force then."}
                ],
                "responses": {
                  "200": {"description": "Customer (empty collections for a user never seen)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Customer"}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              },
              "delete": {
                "summary": "Erase a person: the user, their aliases and their appAccountTokens (api.md §7)",
                "description": "Crypto-shredding: their keys are destroyed, so their sealed events, feed rows and signed payloads are unreadable for good; every row naming them is deleted or names their opaque subject. Their purchases and the revenue they count stay, under that opaque id. Afterwards the id reads as never seen, at every asOf. A user recorded before the log named users by subject (migration 0047) is refused (409 erasure_needs_log_migration) until `iap-ledger migrate` ran the log migration. Again: 200, nothing changes.",
                "security": [{"bearer": ["admin"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}, "description": "The user, or one of its aliases (the target is erased with all its aliases)."}
                ],
                "responses": {
                  "200": {"description": "Erased (or never seen)", "content": {"application/json": {"schema": {"type": "object", "required": ["erased"], "properties": {"erased": {"type": "boolean", "enum": [true]}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "erasure_needs_log_migration, or conflict: concurrent writers kept winning over the retries"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/aliases": {
              "post": {
                "summary": "Make another id (typically the anonymous one the app used before sign-in) an alias of the user (api.md §7): its purchases, chains, balances (added), grants and tokens move to the user as one recorded merge, and every later call naming the alias acts on the user. The feed emits a TRANSFER, on the user, for each chain that moved; asOf before the merge answers as the two were",
                "description": "Both ids are taken as named: an alias as either side is refused (409 alias_conflict), never followed. The same pair again: 200, nothing recorded.",
                "security": [{"bearer": ["write"]}],
                "parameters": [{"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                  "type": "object", "required": ["alias"],
                  "properties": {"alias": {"$ref": "#/components/schemas/UserId"}}
                }}}},
                "responses": {
                  "200": {"description": "Merged, or merged before (nothing recorded)", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["userId", "aliases", "customer"],
                    "properties": {
                      "userId": {"type": "string"},
                      "aliases": {"type": "array", "items": {"type": "string"}, "description": "Every alias of the user, in merge order"},
                      "customer": {"$ref": "#/components/schemas/Customer"}
                    }
                  }}}},
                  "400": {"$ref": "#/components/responses/Problem", "description": "invalid_request: alias missing, not a valid user id, or the same as userId"},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "alias_conflict: the alias is already an alias of another user or has aliases of its own, or userId is itself an alias; or conflict: concurrent writers kept winning over the retries"},
                  "413": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/users/{userId}/eligibility": {
              "get": {
                "summary": "May the user get the subscription product's introductory offer (api.md §8)? Apple's rule: not when the user (with their aliases), or another user who bought with the same Apple Account (appTransactionId), already had an introductory offer or any subscription in the product's subscription group. The group is the catalog's group for the product, else the subscriptionGroupIdentifier Apple recorded with its transactions",
                "security": [{"bearer": ["read"]}],
                "parameters": [
                  {"name": "userId", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/UserId"}},
                  {"name": "productId", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 256, "x-maxBytes": 256, "pattern": "^[^\\u0000-\\u001F\\u007F]*$"}}
                ],
                "responses": {
                  "200": {"description": "The answer", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["productId", "introductoryOffer", "reason", "group", "sameAppleAccountAs"],
                    "properties": {
                      "productId": {"type": "string"}, "introductoryOffer": {"type": "boolean"},
                      "reason": {"type": "string", "enum": ["eligible", "introductory_offer_used", "subscribed_in_group"]},
                      "group": {"type": ["string", "null"], "description": "The subscription group judged (null: none known; then only the product itself counts)"},
                      "sameAppleAccountAs": {"type": ["string", "null"], "description": "The other user, of the same Apple Account, whose purchase decided it"}
                    }
                  }}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem", "description": "not_found: the product is neither in the catalog nor in any recorded transaction"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "not_auto_renewable: the catalog says the product is no subscription"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/subscriptions/{originalTransactionId}/app-account-token": {
              "put": {
                "summary": "Set the appAccountToken of an old purchase (api.md §8): Apple's Set App Account Token for the chain, in its environment with its app's serverAPI key, then the token registered for the chain's owner as POST /v1/users/{userId}/app-account-token registers it (an AppAccountTokenRegistered event), so Apple's later facts carrying it belong to them",
                "description": "Refused before Apple is asked: no such chain (404), nobody owns it yet (409 conflict: claim it first), the token is another user's (409 app_account_token_taken).",
                "security": [{"bearer": ["admin"]}],
                "parameters": [{"name": "originalTransactionId", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                  "type": "object", "required": ["appAccountToken"], "additionalProperties": false,
                  "properties": {"appAccountToken": {"$ref": "#/components/schemas/AppAccountTokenRequest/properties/appAccountToken"}}
                }}}},
                "responses": {
                  "200": {"description": "Apple set it; the owner holds it", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["originalTransactionId", "userId", "appAccountToken", "environment", "customer"],
                    "properties": {
                      "originalTransactionId": {"type": "string"}, "userId": {"type": "string"},
                      "appAccountToken": {"type": "string", "description": "Lowercased"},
                      "environment": {"type": "string", "description": "Where Apple set it"},
                      "customer": {"$ref": "#/components/schemas/Customer"}
                    }
                  }}}},
                  "400": {"$ref": "#/components/responses/Problem", "description": "invalid_request: no appAccountToken, not a UUID, or an unknown field"},
                  "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem", "description": "conflict: nobody owns the chain yet; or app_account_token_taken"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "apple_rejected (with appleErrorCode: 4000183 not a UUID, 4000185 a Family Sharing purchase, 4000187 not an original transaction id), or server_api_not_configured"},
                  "502": {"$ref": "#/components/responses/Problem", "description": "apple_unavailable"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/apple/retention-message": {
              "post": {
                "summary": "Apple's Retention Messaging endpoint (api.md §8; no API key: Apple calls it, only an Apple-signed realtime request for a configured app and environment gets in). Answers Apple's RealtimeResponseBody chosen by the app's first matching retention rule (productId, locale, minTenureMonths: whole months since the chain's first purchase, 0 for a chain the ledger has not recorded); no rule: {} and Apple shows its default message. Nothing in the path calls Apple. Every request is recorded with its answer (a RetentionRequestAnswered event on the chain, apple.retention_requests, analytics.retention_requests); Apple asking again with the same requestIdentifier is answered again and recorded once",
                "security": [],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["signedPayload"], "description": "Apple's RealtimeRequestBody. Other fields are ignored.", "properties": {"signedPayload": {"type": "string", "minLength": 1, "description": "Apple's DecodedRealtimeRequestBody (originalTransactionId, appAppleId, productId, userLocale, requestIdentifier, signedDate, environment) as a JWS; one that does not verify is a 422 and records nothing."}}}}}},
                "responses": {
                  "200": {"description": "Apple's RealtimeResponseBody: at most one member (message, alternateProduct or promotionalOffer); UUIDs upper case as Apple's library writes them", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
                    "message": {"type": "object", "required": ["messageIdentifier"], "additionalProperties": false, "properties": {"messageIdentifier": {"type": "string", "format": "uuid"}}},
                    "alternateProduct": {"type": "object", "required": ["productId"], "additionalProperties": false, "properties": {"messageIdentifier": {"type": "string", "format": "uuid"}, "productId": {"type": "string"}}},
                    "promotionalOffer": {"type": "object", "required": ["promotionalOfferSignatureV2"], "additionalProperties": false, "properties": {"messageIdentifier": {"type": "string", "format": "uuid"}, "promotionalOfferSignatureV2": {"type": "string", "description": "The promotional offer V2 JWS, signed as POST /v1/offers/signatures signs it, for the product Apple asked about, transactionId the chain's originalTransactionId"}}}
                  }}}}},
                  "400": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem", "description": "verification_failed (reason unknown_app: not a configured appAppleId in Production; wrong_environment; or the signature, chain or a field), or server_api_not_configured (an offer rule and no key to sign it)"},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
        """#
}
