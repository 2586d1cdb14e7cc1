import Testing

/// The tags `make test-fast` and `swift test --skip tag:…` select on. Swift Testing names a tag by
/// its member name, so `Tests/EventStoreTests/Tags.swift` declares the same two it uses and a
/// filter matches both targets (a shared library target would make TestSupport, and with it the
/// benchmark binary, link the Testing framework).
extension Tag {
    /// Starts PostgreSQL (a private cluster, a fresh database), in process or through `serve`.
    @Tag static var database: Self
    /// Runs several processes as a deployment does: replicas, HAProxy, PgBouncer, the local cluster.
    @Tag static var cluster: Self
    /// Takes ten seconds or more on its own (real processes, browsers, deliberate waits).
    @Tag static var slow: Self
}
