import EventStore
import Foundation
import Synchronization

/// One background job's lease, as its holder uses it: `keep()` before and between pieces of
/// work (it asks the table only when LeaseKeeper says it is due, so calling it often is cheap),
/// `release()` on a graceful stop so the next instance takes over at once, and `fence` as the
/// first statement of a write transaction that must not commit once another instance holds it.
package final class Lease: Sendable {
    package let name: String
    package let holder: LeaseHolder
    package let timing: LeaseKeeper.Timing
    package let standsAside: Bool
    private let keeper: Mutex<LeaseKeeper>
    /// Serializes the askers of this lease (a job and its background renewer) across the
    /// statement, while `keeper` is only ever locked for a moment (metrics read it).
    private let asking = Mutex<Void>(())

    package init(name: String, holder: LeaseHolder, timing: LeaseKeeper.Timing, standsAside: Bool = true) {
        self.name = name
        self.standsAside = standsAside
        self.holder = holder
        self.timing = timing
        keeper = Mutex(LeaseKeeper(timing: timing))
    }

    /// Monotonic seconds: leases must not move with the wall clock.
    package static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    package var isHeld: Bool { keeper.withLock { $0.isHeld(at: Self.now()) } }

    /// The fencing token while held.
    package var token: Int64? { keeper.withLock { $0.isHeld(at: Self.now()) ? $0.token : nil } }

    /// Acquires or renews the lease when due (`force`: now, whatever the spacing); answers
    /// whether this process holds it.
    @discardableResult
    package func keep(force: Bool = false) -> Bool {
        if standsAside, let reason = holder.reasonToStandAside {
            if keeper.withLock({ $0.token }) != nil {
                holder.logger.warning("lease given up", ["lease": name, "holder": holder.name, "reason": reason])
                release()
            }
            return false
        }
        return asking.withLock { _ in
            let sentAt = Self.now()
            var change = LeaseKeeper.Change.none
            if force || keeper.withLock({ $0.isDue(at: sentAt) }) {
                do {
                    let rows = try holder.run(
                        LeaseTable.acquire(
                            name: name, holder: holder.name, claim: holder.claim, ttlMillis: timing.ttlMillis))
                    change = keeper.withLock { $0.answered(LeaseTable.grant(from: rows), sentAt: sentAt) }
                } catch {
                    // Sent just before a fenced transaction of ours locked the row, it waited on
                    // that lock: no news about the lease, which the fence holds.
                    if keeper.withLock({ $0.fences == 0 }) {
                        holder.logger.warning("lease: cannot ask the table", ["lease": name, "error": "\(error)"])
                    }
                    change = keeper.withLock { $0.failed(at: Self.now()) }
                }
            } else {
                change = keeper.withLock { $0.expire(at: sentAt) }
            }
            switch change {
            case .acquired(let token):
                holder.logger.info("lease acquired", ["lease": name, "holder": holder.name, "token": String(token)])
            case .lost:
                holder.logger.warning("lease lost", ["lease": name, "holder": holder.name])
            case .renewed, .none:
                break
            }
            return isHeld
        }
    }

    /// Gives the lease up (a graceful stop): the row goes, so another instance takes it at its
    /// next ask instead of waiting for the expiry. Nothing to do if it is not held.
    package func release() {
        asking.withLock { _ in
            guard keeper.withLock({ $0.token }) != nil else { return }
            do {
                _ = try holder.run(LeaseTable.release(name: name, claim: holder.claim))
                holder.logger.info("lease released", ["lease": name, "holder": holder.name])
            } catch {
                holder.logger.warning(
                    "lease: cannot release (it expires by itself)", ["lease": name, "error": "\(error)"])
            }
            keeper.withLock { $0.released(at: Self.now()) }
        }
    }

    /// The fencing check for a write transaction of the job (LeaseTable.require); nil when
    /// the lease is not held, and the job must not write.
    package var fence: Query? { token.map { LeaseTable.require(name: name, claim: holder.claim, token: $0) } }

    /// A transaction of the job passed `fence`: it holds the lease row until it ends, however
    /// long it takes (a replay's swap announcing 100k corrections), so the lease is not given up
    /// meanwhile and no renewal is sent to wait on that lock. Pair with `fenceEnded()`.
    package func fencePassed() { keeper.withLock { $0.fenceTaken() } }

    /// The fenced transaction ended: renews at once if its deadline passed meanwhile.
    package func fenceEnded() {
        keeper.withLock { $0.fenceEnded(at: Self.now()) }
        keep()
    }

    /// Runs `body` (one long call: a rebuild, a replay) while a helper thread keeps renewing the
    /// lease on the holder's connection.
    package func renewing<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let done = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            while done.wait(timeout: .now() + min(0.5, timing.renewEvery / 2)) == .timedOut { keep() }
            ended.signal()
        }
        thread.name = "lease-\(name)"
        thread.stackSize = 1 << 20
        thread.start()
        defer {
            done.signal()
            ended.wait()
        }
        return try body()
    }
}
