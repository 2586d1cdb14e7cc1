extension OpenAPIDocument {
    /// The identity operations of api.md §7 that merge ids: a part of `paths`, kept apart so no
    /// file grows past a page.
    static let identityPaths: String = #"""
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
"""#
}
