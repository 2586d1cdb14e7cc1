/// The OpenAPI 3.1 description of the whole HTTP API, served at `GET /openapi.json`.
/// `OpenAPITests` keeps it true: every route the router knows is here and vice versa.
public enum OpenAPIDocument {
    public static let json: String = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "iap-ledger",
    "version": "1.0.0",
    "description": "Self-hosted, event-sourced entitlement service for App Store in-app purchases. Times are RFC 3339 UTC with milliseconds. Errors are application/problem+json with a stable `code`."
  },
  "servers": [{"url": "http://127.0.0.1:8080"}],
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key created with `iap-ledger keys create`; scopes read, write, admin."}},
    "schemas": {
      "Problem": {
        "type": "object",
        "required": ["type", "title", "status", "code"],
        "properties": {
          "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
          "detail": {"type": "string"}, "code": {"type": "string", "description": "Stable machine word, e.g. verification_failed, owned_by_other_user, insufficient_balance, invalid_request, unauthorized, forbidden, not_found, method_not_allowed, payload_too_large, store_unavailable, apple_unavailable."},
          "reason": {"type": "string", "enum": ["malformed", "unsupported_algorithm", "invalid_certificate", "invalid_chain", "signature_mismatch", "unknown_app", "wrong_environment", "receipt_rejected"]},
          "appleStatus": {"type": "integer"}, "balance": {"type": "integer"}, "requestId": {"type": "string"}
        }
      },
      "Entitlement": {
        "type": "object",
        "properties": {
          "active": {"type": "boolean"}, "expiresAt": {"type": ["string", "null"], "format": "date-time"},
          "productId": {"type": "string"}, "source": {"type": "string", "enum": ["subscription", "non_consumable", "non_renewing_subscription", "admin"]},
          "originalTransactionId": {"type": ["string", "null"]}, "willRenew": {"type": "boolean"}, "inGracePeriod": {"type": "boolean"}
        }
      },
      "Subscription": {
        "type": "object",
        "properties": {
          "originalTransactionId": {"type": "string"}, "productId": {"type": "string"},
          "status": {"type": "string", "enum": ["active", "in_grace_period", "in_billing_retry", "expired", "revoked"]},
          "expiresAt": {"type": ["string", "null"], "format": "date-time"}, "gracePeriodExpiresAt": {"type": ["string", "null"], "format": "date-time"},
          "autoRenew": {"type": "boolean"}, "autoRenewProductId": {"type": ["string", "null"]},
          "environment": {"type": "string"}, "ownership": {"type": "string"}
        }
      },
      "NonConsumable": {
        "type": "object",
        "properties": {
          "productId": {"type": "string"}, "transactionId": {"type": "string"},
          "purchasedAt": {"type": "string", "format": "date-time"}, "revokedAt": {"type": ["string", "null"], "format": "date-time"},
          "ownership": {"type": "string"}
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
          "version": {"type": "integer", "description": "Sequence of the last event applied for this user; only grows."}
        }
      },
      "PurchaseRequest": {
        "type": "object", "required": ["userId"],
        "properties": {
          "userId": {"type": "string"},
          "signedTransaction": {"type": "string", "description": "StoreKit 2 signed transaction (JWS)."},
          "receipt": {"type": "string", "description": "StoreKit 1 base64 app receipt, verified with verifyReceipt (production, then sandbox on 21007)."}
        }
      },
      "PurchaseResponse": {
        "type": "object",
        "properties": {
          "userId": {"type": "string"},
          "transactions": {"type": "array", "items": {"type": "object", "properties": {
            "transactionId": {"type": "string"}, "originalTransactionId": {"type": "string"}, "productId": {"type": "string"},
            "result": {"type": "string", "enum": ["recorded", "duplicate"]}}}},
          "customer": {"$ref": "#/components/schemas/Customer"}
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
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["signedPayload"], "properties": {"signedPayload": {"type": "string"}}}}}},
        "responses": {
          "200": {"description": "Recorded or duplicate", "content": {"application/json": {"schema": {"type": "object", "properties": {"notificationUUID": {"type": "string"}, "result": {"type": "string", "enum": ["recorded", "duplicate"]}}}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "413": {"$ref": "#/components/responses/Problem"},
          "422": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/users/{userId}": {
      "get": {
        "summary": "The user's entitlements, subscriptions, non-consumables and balances",
        "security": [{"bearer": ["read"]}],
        "parameters": [
          {"name": "userId", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "asOf", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "The document as it would have been answered at that instant, from the events recorded up to it, under the catalog version in force then."}
        ],
        "responses": {
          "200": {"description": "Customer (empty collections for a user never seen)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Customer"}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
          "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/users/{userId}/events": {
      "get": {
        "summary": "The user's history, oldest first",
        "security": [{"bearer": ["read"]}],
        "parameters": [
          {"name": "userId", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "after", "in": "query", "required": false, "schema": {"type": "integer"}},
          {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}
        ],
        "responses": {
          "200": {"description": "Events", "content": {"application/json": {"schema": {"type": "object", "properties": {"events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}, "next": {"type": ["integer", "null"]}}}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
          "403": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/subscriptions/{originalTransactionId}": {
      "get": {
        "summary": "One transaction chain: owner, state, every transaction and renewal info recorded",
        "security": [{"bearer": ["read"]}],
        "parameters": [{"name": "originalTransactionId", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {
          "200": {"description": "The chain", "content": {"application/json": {"schema": {"type": "object"}}}},
          "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
          "404": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/users/{userId}/balances/{currency}/debit": {
      "post": {
        "summary": "Spend from a balance, idempotently; never below zero",
        "security": [{"bearer": ["write"]}],
        "parameters": [
          {"name": "userId", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "currency", "in": "path", "required": true, "schema": {"type": "string"}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["amount", "idempotencyKey"], "properties": {"amount": {"type": "integer", "minimum": 1}, "idempotencyKey": {"type": "string"}, "reason": {"type": "string"}}}}}},
        "responses": {
          "200": {"description": "Debited or duplicate", "content": {"application/json": {"schema": {"type": "object", "properties": {"balance": {"type": "integer"}, "result": {"type": "string", "enum": ["debited", "duplicate"]}}}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
          "403": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
          "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/admin/replay": {
      "post": {
        "summary": "Rebuild every projection from the log under the recorded catalog in force (or report what would change); 409 while another replay runs or when a new catalog version was recorded meanwhile",
        "security": [{"bearer": ["admin"]}],
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "properties": {"dryRun": {"type": "boolean"}, "projections": {"type": "array", "items": {"type": "string", "enum": ["users", "analytics"]}}}}}}},
        "responses": {
          "200": {"description": "Report", "content": {"application/json": {"schema": {"type": "object", "properties": {"events": {"type": "integer"}, "changedUsers": {"type": "array", "items": {"type": "object", "properties": {"userId": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}, "before": {"type": ["object", "null"]}, "after": {"type": ["object", "null"]}}}}, "changedUserCount": {"type": "integer"}, "durationMs": {"type": "integer"}, "eventsPerSecond": {"type": "integer"}, "dryRun": {"type": "boolean"}, "swapped": {"type": "boolean"}, "catchUpEvents": {"type": "integer"}, "users": {"type": "integer"}, "changedChainOwners": {"type": "integer"}}}}}},
          "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
          "409": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/admin/projections": {
      "get": {
        "summary": "Each projection's version, position and lag",
        "security": [{"bearer": ["admin"]}],
        "responses": {
          "200": {"description": "Projections", "content": {"application/json": {"schema": {"type": "object"}}}},
          "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/healthz": {"get": {"summary": "200 while the process runs", "security": [], "responses": {"200": {"description": "OK"}}}},
    "/readyz": {"get": {"summary": "200 when PostgreSQL is reachable, else 503", "security": [], "responses": {"200": {"description": "Ready"}, "503": {"$ref": "#/components/responses/Problem"}}}},
    "/metrics": {"get": {"summary": "Prometheus text format", "security": [], "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    "/openapi.json": {"get": {"summary": "This document", "security": [], "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}}}}
  }
}
"""#
}
