import Dispatch
import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Reads
@testable import Service

/// The feed on its own against real PostgreSQL: what a check drops, and readers that give up
/// while a check hangs.
@Suite(.tags(.database)) struct UserDocumentCacheCheckTests {
    func upsert(_ userId: String, _ document: String, on connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO proj.users (user_id, version, document, rendered_at) VALUES ($1, 1, $2, 0)
            ON CONFLICT (user_id) DO UPDATE SET document = excluded.document, changed_tx = DEFAULT
            """, [userId, document])
    }

    @Test func aCheckDropsExactlyTheDocumentsWrittenSinceThePreviousOne() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let writer = try Connection(conninfo)
        try upsert("a", "{}", on: writer)
        try upsert("b", "{}", on: writer)
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        let feed = UserDocumentCacheCheck(conninfo: conninfo, session: .direct, cache: cache, logger: .silent)
        defer { feed.stop() }
        #expect(feed.awaitCheck())
        // Rows written before the first check may be dropped once more (the horizon is
        // cluster-wide, so other sessions can hold it back): that is conservative, not wrong.
        #expect(feed.awaitCheck())
        for id in ["a", "b"] {
            cache.insert(
                .init(document: Array(id.utf8), validFrom: 0, validUntil: nil), for: id, ticket: cache.ticket(for: id))
        }
        #expect(feed.awaitCheck())
        #expect(cache.document(for: "a", at: 1) != nil && cache.document(for: "b", at: 1) != nil)  // nothing changed
        try upsert("b", #"{"new":true}"#, on: writer)
        #expect(feed.awaitCheck())
        #expect(cache.document(for: "a", at: 1) != nil)
        #expect(cache.document(for: "b", at: 1) == nil)
    }

    @Test func readersThatGiveUpOnAHangingCheckDoNotStrandTheOthers() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        let feed = UserDocumentCacheCheck(conninfo: conninfo, session: .direct, cache: cache, logger: .silent)
        defer { feed.stop() }
        #expect(feed.awaitCheck())  // connected, horizon known

        // A check hangs on the lock; meanwhile readers queue for the next one: first three that
        // give up after 200 ms, then four that wait long enough. In the next check's wake-up tree
        // the early ones are the later ones' parents, so giving up must pass the wake-up on.
        let locker = try Connection(conninfo)
        try locker.executeScript("BEGIN; LOCK TABLE proj.users IN ACCESS EXCLUSIVE MODE")
        let impatient = Answers()
        let patient = Answers()
        let group = DispatchGroup()
        func reader(timeout: Duration, into answers: Answers) {
            group.enter()
            Thread.detachNewThread {
                let answer = feed.awaitCheck(timeout: timeout)
                answers.list.withLock { $0.append(answer) }
                group.leave()
            }
        }
        reader(timeout: .milliseconds(100), into: impatient)  // its check is the one that hangs
        try eventually("the first reader's check to start", within: 10) { feed.waiters.checking == 1 }
        for _ in 0..<3 { reader(timeout: .milliseconds(200), into: impatient) }
        try eventually("three impatient readers queued", within: 10) { feed.waiters.pending == 3 }
        for _ in 0..<4 { reader(timeout: .seconds(10), into: patient) }
        try eventually("four patient readers queued", within: 10) { feed.waiters.pending == 7 }
        try eventually("the impatient readers to give up", within: 10) { impatient.list.withLock { $0.count } == 4 }
        try locker.executeScript("COMMIT")
        #expect(group.wait(timeout: .now() + 15) == .success)
        #expect(impatient.list.withLock { $0 } == [false, false, false, false])
        #expect(patient.list.withLock { $0 } == [true, true, true, true])

        // The hung check completes; readers after it are answered (none is left waiting).
        let later = Mutex<[Bool]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let answer = feed.awaitCheck(timeout: .seconds(5))
            later.withLock { $0.append(answer) }
        }
        #expect(later.withLock { $0 } == Array(repeating: true, count: 6))
    }

    /// Reads that hold no thread (`whenChecked`) share checks with blocking ones: a hanging check
    /// gives the impatient ones up from the sweep while it still hangs, and every callback is
    /// called exactly once.
    @Test func callbackReadersAreGivenUpByTheSweepAndAnsweredOnceWhenTheCheckEnds() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        let feed = UserDocumentCacheCheck(conninfo: conninfo, session: .direct, cache: cache, logger: .silent)
        defer { feed.stop() }
        #expect(feed.awaitCheck())

        let locker = try Connection(conninfo)
        try locker.executeScript("BEGIN; LOCK TABLE proj.users IN ACCESS EXCLUSIVE MODE")
        let impatient = Answers()
        let patient = Answers()
        let blocking = Answers()
        let group = DispatchGroup()
        func callback(timeout: Duration, into answers: Answers) {
            group.enter()
            feed.whenChecked(timeout: timeout) { answer in
                answers.list.withLock { $0.append(answer) }
                group.leave()
            }
        }
        callback(timeout: .milliseconds(150), into: impatient)  // its check is the one that hangs
        try eventually("the first reader's check to start", within: 10) { feed.waiters.checking == 1 }
        for _ in 0..<3 { callback(timeout: .milliseconds(200), into: impatient) }
        group.enter()
        Thread.detachNewThread {
            let answer = feed.awaitCheck(timeout: .seconds(10))
            blocking.list.withLock { $0.append(answer) }
            group.leave()
        }
        for _ in 0..<4 { callback(timeout: .seconds(10), into: patient) }
        // Given up while the check still hangs (deadline plus at most one 100 ms sweep).
        try eventually("the impatient readers to give up", within: 10) { impatient.list.withLock { $0.count } == 4 }
        #expect(impatient.list.withLock { $0 } == [false, false, false, false])
        #expect(patient.list.withLock { $0.isEmpty } && blocking.list.withLock { $0.isEmpty })
        try locker.executeScript("COMMIT")
        #expect(group.wait(timeout: .now() + 15) == .success)
        #expect(patient.list.withLock { $0 } == [true, true, true, true])
        #expect(blocking.list.withLock { $0 } == [true])
        // A second call would have left the group unbalanced (a crash) or appended: checked by
        // another check's full round, which answers and sweeps every queued reader again.
        #expect(feed.awaitCheck(timeout: .seconds(10)))
        #expect(impatient.list.withLock { $0.count } == 4)
    }
}

private final class Answers: Sendable {
    let list = Mutex<[Bool]>([])
}
