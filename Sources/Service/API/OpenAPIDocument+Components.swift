import Infrastructure

extension OpenAPIDocument {
    /// The document's shared schemas, security schemes and responses (`OpenAPIDocument.json`
    /// joins them between the header and the paths).
    static let components: String = #"""
          "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key created with `iap-ledger keys create`; scopes read, write, admin."}},
            "schemas": {
              "OverviewSeries": {"type": "array", "items": {"type": "object", "required": ["t", "value"], "properties": {"t": {"type": "string", "format": "date-time", "description": "The bucket's start"}, "value": {"type": "integer"}}}},
              "Problem": {
                "type": "object",
                "required": ["type", "title", "status", "code"],
                "properties": {
                  "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                  "detail": {"type": "string"}, "code": {"type": "string", "description": "Stable machine word: verification_failed, owned_by_other_user, insufficient_balance, invalid_request, unauthorized, forbidden, not_found, method_not_allowed, payload_too_large, replay_in_progress, conflict, server_api_not_configured, not_auto_renewable, unknown_app, wrong_environment, store_unavailable, projection_version_ahead, draining, apple_unavailable, apple_rejected, internal_error. projection_version_ahead (503): the database's projections were built by newer code than this instance's during a rolling upgrade; another instance serves the request (see projection, databaseVersion, codeVersion). draining (503, /readyz only): this instance is stopping after SIGTERM and still serves what reaches it. conflict (409, any route that writes): concurrent writers to the same data kept winning over the service's retries; nothing was recorded; retry (Retry-After). internal_error (500, any route): a bug or an unexpected database error; the service log has the cause under the requestId."},
                  "reason": {"type": "string", "enum": ["malformed", "unsupported_algorithm", "invalid_certificate", "invalid_chain", "signature_mismatch", "unknown_app", "wrong_environment", "receipt_rejected"]},
                  "appleStatus": {"type": "integer"}, "balance": {"type": "integer"}, "requestId": {"type": "string"},
                  "projection": {"type": "string", "description": "projection_version_ahead: the projection built by newer code"},
                  "databaseVersion": {"type": "integer"}, "codeVersion": {"type": "integer"}
                }
              },
              "Entitlement": {
                "type": "object",
                "required": ["active", "expiresAt", "productId", "source", "originalTransactionId", "willRenew", "inGracePeriod"],
                "properties": {
                  "active": {"type": "boolean"}, "expiresAt": {"type": ["string", "null"], "format": "date-time", "description": "null: no end (a non-consumable)."},
                  "productId": {"type": ["string", "null"], "description": "The product that gives it; null when a promotional grant (source promotional) decides it."},
                  "source": {"type": "string", "enum": ["subscription", "non_consumable", "non_renewing_subscription", "promotional", "admin"]},
                  "originalTransactionId": {"type": ["string", "null"], "description": "The chain that gives it; null when a promotional grant decides it."},
                  "willRenew": {"type": "boolean"}, "inGracePeriod": {"type": "boolean"},
                  "grantId": {"type": "string", "pattern": "^grt_[0-9a-f]{32}$", "description": "Only when source is promotional: the grant that decides the entitlement (the one reaching furthest)."}
                }
              },
              "Subscription": {
                "type": "object",
                "required": ["originalTransactionId", "productId", "status", "expiresAt", "gracePeriodExpiresAt", "autoRenew", "autoRenewProductId", "environment", "ownership", "revokedAt", "isTrial", "offerType", "isIntroductoryOffer"],
                "properties": {
                  "originalTransactionId": {"type": "string"}, "productId": {"type": "string"},
                  "status": {"type": "string", "enum": ["active", "in_grace_period", "in_billing_retry", "expired", "revoked"]},
                  "expiresAt": {"type": ["string", "null"], "format": "date-time"}, "gracePeriodExpiresAt": {"type": ["string", "null"], "format": "date-time"},
                  "autoRenew": {"type": "boolean"}, "autoRenewProductId": {"type": ["string", "null"]},
                  "environment": {"type": "string"}, "ownership": {"type": "string"},
                  "revokedAt": {"type": ["string", "null"], "format": "date-time", "description": "When Apple refunded or revoked it; null otherwise."},
                  "isTrial": {"type": "boolean"}, "offerType": {"type": ["integer", "null"], "description": "Apple's offerType of the current period (1 introductory, 2 promotional, 3 offer code, 4 win-back); null without an offer."},
                  "isIntroductoryOffer": {"type": "boolean"},
                  "appTransactionId": {"type": "string", "description": "Apple's appTransactionId of the current period's transaction (App Store Server API 1.15: one per Apple Account and app); absent when Apple sent none."},
                  "previousOriginalTransactionId": {"type": "string", "description": "The chain this subscription was migrated from (Notifications 2.16); the new chain belongs to that chain's owner. Absent otherwise."},
                  "commitment": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["period", "periods", "expiresAt", "willRenew", "price"], "properties": {
                    "period": {"type": ["integer", "null"], "description": "Apple's billingPeriodNumber of the current period."},
                    "periods": {"type": ["integer", "null"], "description": "Apple's totalBillingPeriods (12)."},
                    "expiresAt": {"type": ["string", "null"], "format": "date-time", "description": "Apple's commitmentExpiresDate: for display; access follows the subscription's expiresAt."},
                    "willRenew": {"type": "boolean", "description": "The renewal info's commitmentAutoRenewStatus: whether the commitment renews when its last period ends."},
                    "price": {"type": ["integer", "null"], "description": "Apple's commitmentPrice: the whole commitment's, in milliunits."}}}],
                    "description": "A monthly subscription with a 12-month commitment (App Store Server API 1.21); null for every other plan."},
                  "renewal": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["renewalPrice", "currency", "offerType", "offerDiscountType", "offerPeriod", "offerIdentifier", "eligibleWinBackOfferIds", "appAccountToken"], "properties": {
                    "renewalPrice": {"type": ["integer", "null"], "description": "Apple's renewalPrice: what the next renewal costs, in milliunits of currency."},
                    "currency": {"type": ["string", "null"], "description": "ISO 4217 currency of renewalPrice."},
                    "offerType": {"type": ["integer", "null"], "description": "The next renewal's offer: 1 introductory, 2 promotional, 3 offer code, 4 win-back."},
                    "offerDiscountType": {"type": ["string", "null"], "description": "FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME."},
                    "offerPeriod": {"type": ["string", "null"], "description": "The offer's duration, ISO 8601 (P1M…)."},
                    "offerIdentifier": {"type": ["string", "null"], "description": "The offer's id (promotional offer, offer code or win-back offer)."},
                    "eligibleWinBackOfferIds": {"type": "array", "items": {"type": "string"}, "description": "Win-back offers the customer may take, best first, as Apple lists them; empty when none."},
                    "appAccountToken": {"type": ["string", "null"], "description": "The appAccountToken on the renewal info."}}}],
                    "description": "The next renewal as the chain's newest renewal info states it (App Store Server API 1.12–1.18): display only, it changes no status, money or change. null before any renewal info was recorded."}
                }
              },
              "NonConsumable": {
                "type": "object",
                "required": ["productId", "transactionId", "purchasedAt", "revokedAt", "ownership"],
                "properties": {
                  "productId": {"type": "string"}, "transactionId": {"type": "string"},
                  "purchasedAt": {"type": "string", "format": "date-time"}, "revokedAt": {"type": ["string", "null"], "format": "date-time"},
                  "ownership": {"type": "string"},
                  "appTransactionId": {"type": "string", "description": "Apple's appTransactionId (one per Apple Account and app); absent when Apple sent none."}
                }
              },
              "Customer": {
                "type": "object",
                "required": ["userId", "entitlements", "subscriptions", "nonConsumables", "balances", "version"],
                "properties": {
                  "userId": {"type": "string"},
                  "entitlements": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Entitlement"}},
                  "subscriptions": {"type": "array", "items": {"$ref": "#/components/schemas/Subscription"}},
                  "nonConsumables": {"type": "array", "items": {"$ref": "#/components/schemas/NonConsumable"}},
                  "balances": {"type": "object", "additionalProperties": {"type": "integer"}},
                  "sameAppleAccountAs": {"type": "array", "items": {"type": "string"}, "description": "Other users who bought with an Apple Account (appTransactionId) this user, who has no appAccountToken, bought with later: a hint for support, never a transfer. Absent when empty."},
                  "consentRescindedAt": {"type": "string", "format": "date-time", "description": "When Apple said (RESCIND_CONSENT) a parent withdrew consent for a minor's Apple Account this user bought with. Absent otherwise; access is unchanged."},
                  "version": {"type": "integer", "description": "Sequence of the last event applied for this user; only grows."}
                }
              },
              "Change": {
                "type": "object",
                "description": "A transition of what a user has (api.md §4). The same bytes in the pull feed and in every webhook attempt.",
                "required": ["id", "cursor", "type", "userId", "environment", "occurredAt", "recordedAt", "productId", "originalTransactionId", "transactionId", "entitlementIds", "details", "customer"],
                "properties": {
                  "id": {"type": "string", "pattern": "^chg_[0-9]{15,}$", "description": "Stable: the webhook-id of every attempt."},
                  "cursor": {"type": "string", "description": "Opaque position in the feed; pass it back as after."},
                  "type": {"type": "string", "enum": ["INITIAL_PURCHASE", "RENEWAL", "PRODUCT_CHANGE", "CANCELLATION", "UNCANCELLATION", "BILLING_ISSUE", "BILLING_RECOVERED", "EXPIRATION", "REFUND", "REFUND_REVERSED", "NON_RENEWING_PURCHASE", "NON_CONSUMABLE_PURCHASE", "CONSUMABLE_PURCHASE", "BALANCE_DEBIT", "TRANSFER", "PROMOTIONAL_GRANT", "PROMOTIONAL_REVOKE", "CONSENT_RESCINDED", "CORRECTION", "TEST"]},
                  "userId": {"type": ["string", "null"]},
                  "environment": {"type": ["string", "null"], "description": "null for a change with no store environment (a debit, a grant)."},
                  "occurredAt": {"type": "string", "format": "date-time", "description": "When the transition took effect: the instant itself for what time alone changes."},
                  "recordedAt": {"type": "string", "format": "date-time"},
                  "productId": {"type": ["string", "null"]}, "originalTransactionId": {"type": ["string", "null"]}, "transactionId": {"type": ["string", "null"]},
                  "entitlementIds": {"type": "array", "items": {"type": "string"}},
                  "details": {"type": "object", "description": "TRANSFER and PRODUCT_CHANGE: from, to. CONSUMABLE_PURCHASE, BALANCE_DEBIT and a consumable's REFUND and REFUND_REVERSED: currency, amount, balance (a REFUND's amount is what it took back: all of the credit, or a prorated refund's share rounded down; a REFUND_REVERSED's what it gave back). A prorated REFUND also carries revocationPercentage (Apple's share, milliunits: 50000 = 50 %). CORRECTION: before, after. BILLING_ISSUE, EXPIRATION: status. CONSENT_RESCINDED: appTransactionId (the Apple Account whose consent a parent withdrew)."},
                  "customer": {"oneOf": [{"$ref": "#/components/schemas/Customer"}, {"type": "null"}], "description": "The user's document after the change; null for TEST (no user)."}
                }
              },
              "UserId": {"type": "string", "minLength": 1, "maxLength": 256, "x-maxBytes": 256, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "1–256 bytes of UTF-8, no control characters (U+0000–U+001F, U+007F)."},
              "PurchaseRequest": {
                "type": "object", "required": ["userId"],
                "description": "Exactly one of signedTransaction (StoreKit 2) and receipt (StoreKit 1). Other fields are ignored.",
                "oneOf": [{"required": ["signedTransaction"]}, {"required": ["receipt"]}],
                "properties": {
                  "userId": {"$ref": "#/components/schemas/UserId"},
                  "signedTransaction": {"type": "string", "minLength": 1, "description": "StoreKit 2 signed transaction (JWS); one that does not verify is a 422."},
                  "receipt": {"type": "string", "minLength": 1, "contentEncoding": "base64", "contentMediaType": "application/pkcs7-mime", "description": "StoreKit 1 app receipt: standard base64 (line breaks ignored) of a PKCS#7 SignedData with its pkcs7-data content embedded. Anything else is a 400 before Apple is asked; a receipt of that shape is verified with verifyReceipt (production, then sandbox on 21007)."}
                }
              },
              "Identifier": {"type": "string", "minLength": 1, "maxLength": 256, "x-maxBytes": 256, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "1–256 bytes of UTF-8, no control characters."},
              "TestNotificationTarget": {
                "type": "object",
                "description": "Other fields are ignored; an empty body is {}. bundleId may be left out when one app has a serverAPI key, environment when the app accepts only one of Production, Sandbox and LocalTesting (the test store); otherwise each is required (400). The service remembers both with the token Apple answers, for GET …/test-notification/{token}.",
                "properties": {
                  "bundleId": {"$ref": "#/components/schemas/Identifier", "description": "The app whose key asks Apple."},
                  "environment": {"type": "string", "enum": ["Production", "Sandbox", "LocalTesting"]}
                }
              },
              "OfferSignatureRequest": {
                "type": "object", "required": ["productId", "offerId", "userId"],
                "description": "Other fields are ignored. The signing app is bundleId when given; else the app whose products list productId; when several or none do, the one app (among those, or all) with a serverAPI key.",
                "properties": {
                  "productId": {"$ref": "#/components/schemas/Identifier"},
                  "offerId": {"$ref": "#/components/schemas/Identifier", "description": "The promotional offer identifier set up in App Store Connect."},
                  "userId": {"$ref": "#/components/schemas/UserId", "description": "Signed as the legacy applicationUsername (lower-cased, as Apple's library does)."},
                  "transactionId": {"$ref": "#/components/schemas/Identifier", "description": "Any transaction (or appTransactionId) of the customer; signed into the V2 JWS when given."},
                  "bundleId": {"$ref": "#/components/schemas/Identifier", "description": "The app whose key signs, when the product alone does not tell."}
                }
              },
              "OfferSignatureResponse": {
                "type": "object", "required": ["bundleId", "jws", "legacy"],
                "properties": {
                  "bundleId": {"type": "string", "description": "The app whose key signed."},
                  "jws": {"type": "string", "description": "Promotional offer V2 signature (compact JWS, ES256; claims iss, iat, aud promotional-offer, bid, nonce, productId, offerIdentifier, transactionId when given) for Product.PurchaseOption.promotionalOffer(_:compactJWS:)."},
                  "legacy": {"type": "object", "required": ["keyIdentifier", "nonce", "timestamp", "signature"], "description": "SKPaymentDiscount / promotionalOffer(offerID:keyID:nonce:signature:timestamp:).", "properties": {
                    "keyIdentifier": {"type": "string"}, "nonce": {"type": "string", "format": "uuid", "description": "Lower case, as signed."},
                    "timestamp": {"type": "integer", "description": "Milliseconds since 1970, as signed; the offer is valid for 24 hours from it."},
                    "signature": {"type": "string", "contentEncoding": "base64", "description": "ECDSA-SHA256 (DER) over bundleId, keyIdentifier, productId, offerId, userId (lower-cased), nonce, timestamp joined by U+2063."}}}
                }
              },
              "DebitRequest": {
                "type": "object", "required": ["amount", "idempotencyKey"],
                "description": "Other fields are ignored.",
                "properties": {
                  "amount": {"type": "integer", "minimum": 1, "maximum": 9223372036854775807, "description": "A positive JSON integer literal (no fraction or exponent)."},
                  "idempotencyKey": {"type": "string", "minLength": 1, "maxLength": 200, "x-maxBytes": 200, "description": "1–200 bytes of UTF-8; the same key again answers as the first time did."},
                  "reason": {"type": "string", "description": "Free text kept with the debit."}
                }
              },
              "GrantRequest": {
                "type": "object", "required": ["entitlement"], "additionalProperties": false,
                "oneOf": [{"required": ["duration"]}, {"required": ["until"]}],
                "description": "Exactly one of duration and until. The idempotency key may come as this field or as the Idempotency-Key header (the same rules; both given must be equal).",
                "properties": {
                  "entitlement": {"type": "string", "minLength": 1, "maxLength": 128, "x-maxBytes": 128, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "The entitlement to give (any name: it need not be in the catalog)."},
                  "duration": {"type": "string", "maxLength": 64, "pattern": "^P(?!$)([0-9]+Y)?([0-9]+M)?([0-9]+W)?([0-9]+D)?(T(?=[0-9])([0-9]+H)?([0-9]+M)?([0-9]+S)?)?$", "description": "ISO 8601 duration from now (P7D, P1M, PT12H), as for non-renewing products: calendar months and years in UTC, the day clamped to the month's length. Each number at most 1000000, not all zero."},
                  "until": {"type": "string", "format": "date-time", "x-futureInstant": true, "description": "RFC 3339 instant the grant ends at; must be later than now."},
                  "reason": {"type": "string", "minLength": 1, "maxLength": 500, "x-maxBytes": 500, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "Free text kept with the grant and shown in the change feed."},
                  "idempotencyKey": {"type": "string", "minLength": 1, "maxLength": 200, "x-maxBytes": 200, "pattern": "^[^\\u0000-\\u001F\\u007F]*$", "description": "The same key and body again answer the first grant (200, the same grantId); the same key with another entitlement, duration/until or reason is 422 idempotency_key_reused. Without a key every POST is a new grant."}
                }
              },
              "AppAccountTokenRequest": {
                "type": "object", "additionalProperties": false,
                "description": "{} (or no body) answers the user's own token, minted on the first call and the same ever after; {\"appAccountToken\"} registers a token the app already uses (a user may have several; again: nothing changes).",
                "properties": {
                  "appAccountToken": {"type": "string", "pattern": "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$", "description": "A UUID, any case: tokens compare case-insensitively and are stored lowercased."}
                }
              },
              "AppAccountTokenResponse": {
                "type": "object", "required": ["userId", "appAccountToken"],
                "properties": {
                  "userId": {"type": "string"},
                  "appAccountToken": {"type": "string", "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "description": "Lowercased. Minted tokens are random RFC 4122 version 4 UUIDs. Pass it as StoreKit's appAccountToken purchase option: Apple's transactions and notifications that carry it belong to this user."}
                }
              },
              "GrantResponse": {
                "type": "object", "required": ["grantId", "entitlement", "expiresAt", "result", "customer"],
                "properties": {
                  "grantId": {"type": "string", "pattern": "^grt_[0-9a-f]{32}$", "description": "grt_ and 32 hex digits: the first 128 bits of SHA-256(userId, 0x00, idempotency key) with a key, random without."},
                  "entitlement": {"type": "string"}, "expiresAt": {"type": "string", "format": "date-time"},
                  "result": {"type": "string", "enum": ["granted", "duplicate"], "description": "duplicate: the idempotency key's first grant, answered again (200)."},
                  "customer": {"$ref": "#/components/schemas/Customer"}
                }
              },
              "ReplayRequest": {
                "type": "object", "additionalProperties": false,
                "description": "An empty body or {} rebuilds every projection. Unknown fields, wrong types, unknown names and an empty list are a 400; nothing runs.",
                "properties": {
                  "dryRun": {"type": "boolean", "description": "Report what would change; build and swap nothing."},
                  "projections": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["users", "analytics"]}, "description": "The projections to rebuild; leave out for all."},
                  "projection": {"type": "string", "enum": ["users", "analytics"], "deprecated": true, "description": "One projection, the older spelling of projections."}
                }
              },
              "PurchaseResponse": {
                "type": "object",
                "required": ["userId", "transactions", "customer"],
                "properties": {
                  "userId": {"type": "string"},
                  "bundleId": {"type": "string", "description": "Sync only: the app whose key asked Apple."},
                  "environment": {"type": "string", "description": "Sync only: the store environment Apple answered from."},
                  "fetched": {"type": "integer", "description": "Sync only: the signed items Apple answered."},
                  "transactions": {"type": "array", "items": {"type": "object", "required": ["transactionId", "originalTransactionId", "productId", "result"], "properties": {
                    "transactionId": {"type": "string"}, "originalTransactionId": {"type": "string"}, "productId": {"type": "string"},
                    "result": {"type": "string", "enum": ["recorded", "duplicate"]},
                    "transferredFrom": {"type": "string", "description": "the previous owner, when this purchase moved here (transferPolicy transfer)"}}}},
                  "customer": {"oneOf": [{"$ref": "#/components/schemas/Customer"}, {"type": "null"}], "description": "The user's document after the change; null for TEST (no user)."}
                }
              },
              "Event": {
                "type": "object",
                "properties": {"seq": {"type": "integer"}, "type": {"type": "string"}, "recordedAt": {"type": "string", "format": "date-time"}, "data": {"type": "object"}}
              }
            },
            "responses": {
              "Problem": {"description": "Error", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
            }
          },
        """#
}
