import EventStore
import Infrastructure
import Service
import TestSupport
import Testing

@Suite(.tags(.database)) struct APIKeysStoreTests {
    @Test func aKeyIsShownOnceStoredAsAHashListedWithoutSecretAndRevocable() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let keys = APIKeys()
        let secret = try keys.create(
            name: "backend", scopes: try APIKeys.parseScopes("write, read,read"), on: connection)
        #expect(secret.hasPrefix("iap_"))
        #expect(secret.count == 4 + 64)

        let stored = try connection.query("SELECT * FROM auth.api_keys", [])
        for row in 0..<stored.count {
            for column in 0..<stored.columns.count {
                #expect(stored[row, column]?.contains(secret.dropFirst(4)) != true)
            }
        }

        let listed = try keys.list(on: connection)
        #expect(listed.map(\.name) == ["backend"])
        #expect(listed[0].scopes == ["read", "write"])
        #expect(listed[0].revokedAt == nil)

        let found = try #require(try keys.lookup(secret: secret, on: connection))
        #expect(found.name == "backend")
        #expect(found.scopes == ["read", "write"])
        #expect(try keys.lookup(secret: secret + "0", on: connection) == nil)

        try keys.revoke(name: "backend", on: connection)
        #expect(try keys.lookup(secret: secret, on: connection) == nil)
        #expect(try keys.list(on: connection)[0].revokedAt != nil)
        #expect(throws: APIKeys.Failure.self) { try keys.revoke(name: "backend", on: connection) }
    }

    @Test func duplicateNamesBadNamesAndBadScopesAreClearErrors() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let keys = APIKeys()
        _ = try keys.create(name: "ops", scopes: ["admin"], on: connection)
        do {
            _ = try keys.create(name: "ops", scopes: ["read"], on: connection)
            Issue.record("duplicate accepted")
        } catch {
            #expect(error.description == #"a key named "ops" already exists"#)
        }
        for name in ["", "has space", String(repeating: "x", count: 65), "semi;colon"] {
            #expect(throws: APIKeys.Failure.self) { try keys.create(name: name, scopes: ["read"], on: connection) }
        }
        for text in ["", ",", "read,fly", "READ", "read write"] {
            #expect(throws: APIKeys.Failure.self) { try APIKeys.parseScopes(text) }
        }
        #expect(try APIKeys.parseScopes("admin,read,write") == ["admin", "read", "write"])
    }
}
