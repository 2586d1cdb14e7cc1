import EventStore
import HTTP
import Infrastructure
import JSON

/// `GET /v1/admin/catalog/unconfigured` (admin, api.md §1): what was bought of products the
/// catalog in force does not name.
extension UnconfiguredProducts {
    static func register(_ service: LedgerService, on router: inout Router) {
        router.add("GET", "/v1/admin/catalog/unconfigured", scope: "admin") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let inForce = service.catalogs.current
                let rows = try service.read { connection throws(ServiceError) -> Rows in
                    try database { () throws(DatabaseError) in
                        try connection.query(query(configured: inForce.catalog.products.keys.sorted()))
                    }
                }
                return .json(200, json(decode(rows), catalogVersion: inForce.version))
            }
        }
    }
}
