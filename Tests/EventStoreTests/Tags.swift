import Testing

/// The same tags as `Tests/ServiceTests/Support/Tags.swift` (a tag is named by its member name,
/// so `--skip tag:database` selects across both targets).
extension Tag {
    /// Starts PostgreSQL (a private cluster, a fresh database).
    @Tag static var database: Self
}
