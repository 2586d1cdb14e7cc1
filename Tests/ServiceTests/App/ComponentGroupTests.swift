import Synchronization
import Testing

@testable import Infrastructure
@testable import Service

/// The composition root stops the service one way (ComponentGroup): every part drains, last
/// started first, then every part stops, last started first; once.
@Suite struct ComponentGroupTests {
    @Test func partsDrainThenStopInReverseOrderOnce() {
        let journal = Mutex<[String]>([])
        let group = ComponentGroup()
        for name in ["database", "jobs", "handlers", "server", "long polls"] {
            group.add(
                name, drain: { journal.withLock { $0.append("drain \(name)") } },
                stop: { journal.withLock { $0.append("stop \(name)") } })
        }
        #expect(group.names == ["database", "jobs", "handlers", "server", "long polls"])
        group.stopAll()
        group.stopAll()
        #expect(
            journal.withLock { $0 } == [
                "drain long polls", "drain server", "drain handlers", "drain jobs", "drain database",
                "stop long polls", "stop server", "stop handlers", "stop jobs", "stop database",
            ])
    }

    /// A start-up that fails part-way stops what had started (and only that): what the
    /// service's start does with its group when a later part throws.
    @Test func aStartThatFailsStopsWhatStarted() {
        let journal = Mutex<[String]>([])
        let group = ComponentGroup()
        struct Failed: Error {}
        func start() throws {
            group.add("lock", stop: { journal.withLock { $0.append("release lock") } })
            group.add("cluster", stop: { journal.withLock { $0.append("stop cluster") } })
            throw Failed()
        }
        #expect(throws: Failed.self) {
            do { try start() } catch {
                group.stopAll()
                throw error
            }
        }
        #expect(journal.withLock { $0 } == ["stop cluster", "release lock"])
    }
}
