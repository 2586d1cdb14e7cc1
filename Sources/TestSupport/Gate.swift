import Foundation
import Synchronization

/// A one-way gate for stand-ins that must be slow or hang: they `wait` until the test `open`s
/// it, once it has seen what it wanted (a client's timeout fired, a stop began) or at teardown.
/// A test thus decides when a hang ends instead of guessing a duration; the `wait` bound only
/// keeps a broken test from hanging forever. Once open it stays open: every waiter, present or
/// later, passes at once.
public final class Gate: Sendable {
    /// Entered once at creation, left once by `open`: `wait` on a group at zero returns at once.
    private let group = DispatchGroup()
    private let opened = Mutex<Bool>(false)

    public init() { group.enter() }

    /// Lets every waiter through, now and later; a second call changes nothing.
    public func open() {
        let first = opened.withLock { wasOpen in
            defer { wasOpen = true }
            return !wasOpen
        }
        if first { group.leave() }
    }

    public var isOpen: Bool { opened.withLock { $0 } }

    /// Blocks until the gate is open or `seconds` passed; answers whether it opened.
    @discardableResult
    public func wait(within seconds: Double) -> Bool {
        group.wait(timeout: .now() + seconds) == .success
    }
}
