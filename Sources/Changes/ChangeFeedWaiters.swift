import EventStore
import Foundation
import HTTP
import Infrastructure
import Synchronization

/// The long polls of `GET /v1/changes?wait=S` in this process: requests whose page was empty,
/// suspended (no thread held: `HTTPDeferred`) until a change they would see is visible.
///
/// One thread reads the feed for all of them, every `interval` while any waits, from the last
/// cursor it saw, and answers each waiter the new changes after its own `after` (of its user,
/// when filtered). Changes other instances write are seen the same way: the feed is in the
/// database, not in this process. No lost wake-up: a waiter registers, then reads its own page
/// once more; everything up to the watcher's cursor at registration was visible to that read
/// (the feed is read below the xid horizon), and everything after it the watcher delivers.
package final class ChangeFeedWaiters: Sendable {
    package let feed: ChangeFeedReads
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { feed.ledger }
    package let interval: Double

    private struct Waiter {
        var handle: HTTPDeferred
        var after: FeedCursor
        var userId: String?
        var limit: Int
    }

    private struct State {
        var waiters: [Waiter] = []
        /// The newest change the watcher delivered or the head at the first registration; nil
        /// while nobody waits (the next registration reads the head).
        var seen: FeedCursor?
        var running = false
    }

    private let state = Mutex(State())
    private let stopping = Atomic<Bool>(false)

    package init(feed: ChangeFeedReads, interval: Double = 0.1) {
        self.feed = feed
        self.interval = interval
    }

    /// Count of requests waiting now.
    package var count: Int { state.withLock { $0.waiters.count } }

    /// Answers `query` now if its page has changes, else a deferred response that answers as
    /// soon as one is visible, or an empty page after `query.wait` seconds.
    package func respond(_ query: ChangesQuery) throws(ServiceError) -> HTTPResponse {
        // The first page may come from a replica; the long poll below (head, second read,
        // watcher) stays on the primary, where its no-lost-wake-up argument is made.
        let page = try feed.changes(
            after: query.after, limit: query.limit, userId: query.userId, onReplica: true)
        // A page that read rows but serves none (an erased person's) answers at once: its `next`
        // moves past them.
        guard page.next == nil, query.wait > 0, !stopping.load(ordering: .relaxed) else {
            return .json(200, ChangeFeedReads.changesPage(page, after: query.after))
        }
        let handle = HTTPDeferred(
            timeout: .seconds(query.wait),
            timeoutResponse: .json(200, ChangeFeedReads.changesPage([], next: query.after))
        )
        let needsHead = state.withLock { $0.seen == nil }
        let head = needsHead ? try feed.changeFeedHead() : nil
        let start = state.withLock { state -> Bool in
            if state.seen == nil { state.seen = head }
            state.waiters.append(Waiter(handle: handle, after: query.after, userId: query.userId, limit: query.limit))
            defer { state.running = true }
            return !state.running
        }
        if start { startWatcher() }
        // The second read closes the window between the first one and the registration.
        let again: FeedPage
        do {
            again = try feed.changes(after: query.after, limit: query.limit, userId: query.userId)
        } catch {
            // The handle never reaches the server: end it, so the watcher drops it.
            handle.complete(.json(200, ChangeFeedReads.changesPage([], next: query.after)))
            throw error
        }
        if again.next != nil { handle.complete(.json(200, ChangeFeedReads.changesPage(again, after: query.after))) }
        return .deferred(handle)
    }

    package func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private func startWatcher() {
        let thread = Thread { [self] in watch() }
        thread.name = "change-feed-waiters"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs while anyone waits; the last waiter gone, it ends (the next one starts it again).
    private func watch() {
        while !stopping.load(ordering: .relaxed) {
            let (seen, any) = state.withLock { state -> (FeedCursor?, Bool) in
                state.waiters.removeAll { $0.handle.isCompleted }
                if state.waiters.isEmpty {
                    state.running = false
                    state.seen = nil
                    return (nil, false)
                }
                return (state.seen, true)
            }
            guard any else { return }
            if let seen, let fresh = try? feed.changes(after: seen, limit: 1000, userId: nil),
                let next = fresh.next
            {
                deliver(fresh.changes, next: next)
                if fresh.read == 1000 { continue }  // more behind: read on at once
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    private func deliver(_ fresh: [StoredChange], next: FeedCursor) {
        let ready = state.withLock { state -> [(Waiter, [StoredChange])] in
            state.seen = next
            var ready: [(Waiter, [StoredChange])] = []
            state.waiters.removeAll { waiter in
                let mine = fresh.lazy.filter {
                    $0.cursor > waiter.after && (waiter.userId == nil || $0.userId == waiter.userId)
                }
                .prefix(waiter.limit)
                guard !mine.isEmpty else { return false }
                ready.append((waiter, Array(mine)))
                return true
            }
            return ready
        }
        for (waiter, changes) in ready {
            waiter.handle.complete(.json(200, ChangeFeedReads.changesPage(changes, next: changes.last!.cursor)))
        }
    }
}
