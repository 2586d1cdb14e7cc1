import AppleAPI
import Changes
import HTTP
import Identity
import Infrastructure
import Reads

extension ServiceApp {
    /// The rooms' own routes, each over its room's use-case types, in the router's order (the
    /// routes that call several rooms are API's). `keyNames` names the API key a request used,
    /// for the routes that log who acted.
    static func registerRoomRoutes(
        _ rooms: Rooms, keyNames: @escaping @Sendable (HTTPRequest) -> String?, on router: inout Router
    ) {
        WebhookAdminRoutes(service: rooms.ledger).register(on: &router)
        ReconcileRoutes(apple: rooms.apple).register(on: &router)
        ExtendRoutes(apple: rooms.apple, reads: rooms.reads).register(on: &router)
        OverviewRoutes(service: rooms.ledger).register(on: &router)
        EligibilityRoutes(reads: rooms.reads).register(on: &router)
        UnconfiguredProducts.register(rooms.ledger, on: &router)
        GrantRoutes(service: rooms.ledger, keyNames: keyNames).register(on: &router)
        AppAccountTokenRoutes(service: rooms.ledger, keyNames: keyNames).register(on: &router)
        SetAppAccountTokenRoutes(
            apple: rooms.apple, reads: rooms.reads, keyNames: keyNames
        ).register(on: &router)
        LookupRoutes(
            identities: rooms.identities, apple: rooms.apple,
            keyNames: keyNames
        ).register(on: &router)
        AliasRoutes(identities: rooms.identities, keyNames: keyNames)
            .register(on: &router)
        ErasureRoutes(identities: rooms.identities, keyNames: keyNames)
            .register(on: &router)
        TestNotificationRoutes(ingestion: rooms.ingestion).register(on: &router)
    }
}
