import EventStore

/// A projection the database has built at a newer version than this process's code
/// (ProjectionVersions): another instance, running newer code, rebuilt it.
public struct ProjectionVersionAhead: Sendable, Equatable, CustomStringConvertible {
    public var projection: String
    /// The version recorded in `proj.projection_versions`.
    public var database: Int
    /// The version this process's code builds.
    public var code: Int

    public var description: String {
        "the \(projection) projection is at version \(database) in the database, built by newer code than this"
            + " instance's (version \(code)): it serves no writes and no user documents until it is upgraded"
            + " (or the database is replayed back to version \(code))"
    }

    /// Every projection `built` (name → version) holds at a newer version than `definitions`.
    package static func all(
        built: [String: Int], definitions: [ProjectionVersions.Definition] = ProjectionVersions.all
    ) -> [ProjectionVersionAhead] {
        definitions.compactMap { definition in
            guard let version = built[definition.name], version > definition.version else { return nil }
            return ProjectionVersionAhead(projection: definition.name, database: version, code: definition.version)
        }
    }

    /// The error of a write refused by `es.require_projection_version` (its DETAIL is the
    /// database's version of `users`, the one projection written inline).
    package static func refused(_ error: DatabaseError) -> ProjectionVersionAhead {
        ProjectionVersionAhead(
            projection: ProjectionVersions.users.name, database: error.detail.flatMap { Int($0) } ?? 0,
            code: ProjectionVersions.users.version)
    }
}
