import EventStore
import Foundation
import HTTP
import Infrastructure
import Synchronization

extension WebhookDispatcher {
    /// One endpoint's deliverer.
    package final class Worker: @unchecked Sendable {
        package let endpoint: WebhookEndpoint
        package let conninfo: String
        package let session: SessionSettings
        package let logger: Logger
        package let clock: @Sendable () -> Int64
        package let metrics: WebhookMetrics
        package let lease: Lease
        package let stopping = Atomic<Bool>(false)
        private let finishedRunning = DispatchSemaphore(value: 0)
        private let wake = DispatchSemaphore(value: 0)
        private let finished = Mutex<[(WebhookPlanner.Open, WebhookPlanner.Outcome, Int64, Int64)]>([])
        private var planner: WebhookPlanner
        private var sender: WebhookSender?
        /// Sends on the wire and the claimed deliveries (loaded with their change) waiting for a slot.
        private let slots: WebhookSendSlots<(delivery: WebhookPlanner.Open, change: StoredChange)>
        /// The changes `follow` just read and turned into deliveries, by seq, until they are sent:
        /// on the happy path the feed is read once per batch, not again to send (worker thread only).
        private var followed: [Int64: StoredChange] = [:]
        package static let followedLimit = 4096
        /// Claimed deliveries a round keeps ready beyond those on the wire, per slot. It bounds an
        /// endpoint's rate: a round claims at most `maxInFlight × (1 + readyPerSlot)` and rounds
        /// start at most every `minimumRound`, so 32 × 16 × 20 = 10,240 deliveries/s. At 3 it was
        /// 2,560/s, below this box's ingest rate (3,100 purchases/s in `make bench`): the backlog
        /// grew for as long as the load lasted (delivery lag p99 1.6 s).
        package static let readyPerSlot = 15
        package static let feedPage = 1000
        /// Rounds start at most this often: a round costs several queries whatever it carries (one
        /// per finished send cost the database more than the purchases did at 1,000 changes/s).
        package static let minimumRound = 0.05
        package static let openLimit = 512
        package static let openPages = 8

        package init(
            endpoint: WebhookEndpoint, conninfo: String, session: SessionSettings, logger: Logger,
            clock: @escaping @Sendable () -> Int64, metrics: WebhookMetrics, maxInFlight: Int, lease: Lease,
            poster: HTTPPoster
        ) {
            self.endpoint = endpoint
            self.conninfo = conninfo
            self.session = session
            self.logger = logger
            self.clock = clock
            self.metrics = metrics
            self.lease = lease
            slots = WebhookSendSlots(capacity: maxInFlight)
            // The planner's "in flight" is every claimed delivery: on the wire or ready.
            planner = WebhookPlanner(
                endpoint: endpoint, maxInFlight: maxInFlight * (1 + Self.readyPerSlot),
                random: { Double.random(in: 0..<1) })
            sender = WebhookSender(url: endpoint.url, timeoutSeconds: endpoint.timeoutSeconds, poster: poster)
        }

        package func start() {
            let thread = Thread { [self] in
                run()
                finishedRunning.signal()
            }
            thread.name = "webhooks-\(endpoint.name)"
            thread.start()
        }

        package func join() {
            wake.signal()
            finishedRunning.wait()
            finishedRunning.signal()
        }

        private func run() {
            var connection: Connection?
            var holdsLease = false
            while !stopping.load(ordering: .relaxed) {
                let roundStarted = Date()
                var wait = lease.timing.retryEvery
                do {
                    let held = lease.keep()  // asks the table only when due
                    if held != holdsLease {
                        holdsLease = held
                        if held { logger.info("webhooks: delivering", ["endpoint": endpoint.name]) }
                    }
                    if !holdsLease {
                        dropReady()
                        followed.removeAll()
                    }
                    if holdsLease, connection == nil || connection?.isHealthy == false {
                        connection = try Connection(conninfo, connectTimeout: 5, session: session)
                    }
                    if holdsLease, let connection { wait = try round(on: connection) }
                } catch {
                    logger.warning("webhooks: delivery round failed", ["endpoint": endpoint.name, "error": "\(error)"])
                    connection = nil
                }
                _ = wake.wait(timeout: .now() + max(0.001, wait))
                let spent = Date().timeIntervalSince(roundStarted)
                if spent < Self.minimumRound && !stopping.load(ordering: .relaxed) {
                    Thread.sleep(forTimeInterval: Self.minimumRound - spent)
                }
            }
            dropReady()
            // Let sends in flight finish and be recorded, briefly, so a clean stop does not resend them.
            let deadline = Date().addingTimeInterval(min(endpoint.timeoutSeconds, 5))
            while holdsLease, !planner.inFlight.isEmpty, Date() < deadline, let connection {
                _ = wake.wait(timeout: .now() + 0.05)
                _ = try? recordFinished(on: connection)
            }
            lease.release()
        }

        /// The round's write transactions start with it: nothing is written once the lease is gone.
        private func fenced(_ statements: [Connection.Statement]) throws -> [Connection.Statement] {
            guard let fence = lease.fence else {
                throw DatabaseError(sqlState: LeaseTable.fencedOutState, message: "lease \(lease.name) is not held")
            }
            return [fence.statement] + statements
        }

        /// One round; answers how long to wait for the next (a finished send wakes it earlier).
        private func round(on connection: Connection) throws -> Double {
            try recordFinished(on: connection)
            try follow(on: connection)
            let now = clock()
            var open: [WebhookPlanner.Open] = []
            var sends: [WebhookPlanner.Open] = []
            var wakeAt: Int64?
            // Page on while a full page left room in flight: one user's long queue of waiting
            // changes must not hide the other users behind it.
            for _ in 0..<Self.openPages {
                let page = WebhookDeliveriesTable.decodeOpen(
                    try connection.query(
                        WebhookDeliveriesTable.open(
                            endpoint: endpoint.name, after: open.last?.cursor ?? .start, limit: Self.openLimit)))
                open += page
                let due = planner.due(open, now: now)
                sends += due.sends
                if let at = due.wakeAt { wakeAt = min(wakeAt ?? at, at) }
                if page.count < Self.openLimit || planner.inFlight.count >= planner.maxInFlight { break }
            }
            if !sends.isEmpty { try start(sends, on: connection) }
            var wait = 0.1  // how soon the feed is looked at again
            if let wakeAt { wait = min(wait, Double(max(0, wakeAt - now)) / 1000) }
            return wait
        }

        private func recordFinished(on connection: Connection) throws {
            let done = finished.withLock { list in
                defer { list.removeAll(keepingCapacity: true) }
                return list
            }
            guard !done.isEmpty else { return }
            let now = clock()
            var updates: [WebhookPlanner.Update] = []
            for (delivery, outcome, startedAt, endedAt) in done {
                let update = planner.completed(delivery, outcome: outcome, startedAt: startedAt, now: endedAt)
                updates.append(update)
                metrics.deliveries.increment([endpoint.name, update.status.rawValue])
                if update.status != .delivered {
                    // One line per failed attempt: never the body, of the change or of the answer.
                    logger.warning(
                        "webhook attempt failed",
                        [
                            "endpoint": endpoint.name, "changeId": StoredChange.id(seq: delivery.seq),
                            "status": update.httpStatus.map(String.init) ?? "-", "error": update.error ?? "-",
                            "result": update.status.rawValue,
                        ])
                }
            }
            let statements = try fenced(
                WebhookDeliveriesTable.record(endpoint: endpoint.name, updates, now: now).map(\.statement))
            try connection.transaction { connection in try connection.commit(after: statements) }
        }

        /// Turns the feed after the cursor into deliveries, the cursor moving in the same transaction.
        private func follow(on connection: Connection) throws {
            var cursor = WebhookDeliveriesTable.cursor(
                from: try connection.query(WebhookDeliveriesTable.cursor(endpoint: endpoint.name)))
            if cursor == nil {
                // Placed at start-up by the service; here for a dispatcher started on its own.
                let placed = try WebhookDispatcher.placeNewEndpoints([endpoint.name], on: connection, now: clock())
                if let head = placed[endpoint.name] {
                    logger.info(
                        "webhooks: endpoint starts at the feed's head",
                        ["endpoint": endpoint.name, "cursor": "\(head)"])
                }
                cursor = WebhookDeliveriesTable.cursor(
                    from: try connection.query(WebhookDeliveriesTable.cursor(endpoint: endpoint.name)))
            }
            guard var position = cursor else { return }
            for _ in 0..<10 {
                // Opened as the pull feed serves them: an erased person's rows get no delivery,
                // and the cursor still moves past them.
                let page = try ChangeFeedTable.opened(
                    try connection.query(ChangeFeedTable.page(after: position, limit: Self.feedPage, userId: nil)),
                    on: connection)
                guard let last = page.next else { return }
                let accepted = WebhookPlanner.accepted(page.changes, by: endpoint)
                var statements: [Connection.Statement] = []
                if let create = WebhookDeliveriesTable.create(endpoint: endpoint.name, changes: accepted, now: clock())
                {
                    statements.append(create.statement)
                }
                statements.append(WebhookDeliveriesTable.advanceCursor(endpoint: endpoint.name, to: last).statement)
                let fencedStatements = try fenced(statements)
                try connection.transaction { connection in try connection.commit(after: fencedStatements) }
                for change in accepted where followed.count < Self.followedLimit { followed[change.seq] = change }
                position = last
                if page.read < Self.feedPage { return }
            }
        }

        private func start(_ sends: [WebhookPlanner.Open], on connection: Connection) throws {
            var bySeq: [Int64: StoredChange] = [:]
            var unread: [Int64] = []
            for delivery in sends {
                if let change = followed.removeValue(forKey: delivery.seq) {
                    bySeq[delivery.seq] = change
                } else {
                    unread.append(delivery.seq)
                }
            }
            // Retries, and deliveries followed by an earlier holder or before a restart: opened as
            // the pull feed serves them.
            var unserved: [Int64] = []
            if !unread.isEmpty {
                let page: FeedPage
                do {
                    page = try ChangeFeedTable.opened(
                        try connection.query(ChangeFeedTable.changes(seqs: unread)), on: connection)
                } catch {
                    planner.abandon(sends.map(\.seq))
                    throw error
                }
                for change in page.changes { bySeq[change.seq] = change }
                // Read but not served (its person was erased since it was queued): ended unsent, not
                // retried, so the user's later deliveries are not held behind it.
                unserved = page.seqs.filter { bySeq[$0] == nil }
                if !unserved.isEmpty {
                    do {
                        let skip = try fenced(
                            [
                                WebhookDeliveriesTable.skip(endpoint: endpoint.name, seqs: unserved, now: clock())
                                    .statement
                            ])
                        try connection.transaction { connection in try connection.commit(after: skip) }
                    } catch {
                        planner.abandon(sends.map(\.seq))
                        throw error
                    }
                    planner.abandon(unserved)
                }
            }
            for delivery in sends where !unserved.contains(delivery.seq) {
                guard sender != nil, let change = bySeq[delivery.seq] else {
                    complete(
                        delivery, .error(sender == nil ? "bad URL" : "change not in the feed"), clock(),
                        freesSlot: false)
                    continue
                }
                if slots.claim((delivery, change)) { send(delivery, change) }
            }
        }

        /// Signs at the moment of sending: the timestamp receivers check is the attempt's.
        private func send(_ delivery: WebhookPlanner.Open, _ change: StoredChange) {
            let startedAt = clock()
            guard let sender else { return }
            let body = change.jsonBytes()
            let headers = WebhookSignature.headers(
                key: endpoint.key, id: change.id, timestamp: startedAt / 1000, body: body)
            sender.send(body: body, headers: headers) { [self] outcome in
                complete(delivery, outcome, startedAt, freesSlot: true)
            }
        }

        private func complete(
            _ delivery: WebhookPlanner.Open, _ outcome: WebhookPlanner.Outcome, _ startedAt: Int64, freesSlot: Bool
        ) {
            let endedAt = clock()
            finished.withLock { $0.append((delivery, outcome, startedAt, endedAt)) }
            if freesSlot, let next = slots.finished() { send(next.delivery, next.change) }
            wake.signal()
        }

        /// Unclaims the ready deliveries not yet sent (the lease is gone, or the deliverer stops):
        /// they stay open in the table and a holder sends them later.
        private func dropReady() {
            let dropped = slots.drain()
            if !dropped.isEmpty { planner.abandon(dropped.map(\.delivery.seq)) }
        }
    }
}
