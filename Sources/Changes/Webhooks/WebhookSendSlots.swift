import Infrastructure
import Synchronization

/// The send slots of one endpoint's deliverer: at most `capacity` sends on the wire, and the
/// claimed deliveries waiting for a free slot. A finished send takes the next waiting one at
/// once (the caller sends it), so a slot turns over at the receiver's pace rather than once per
/// delivery round. No I/O: the dispatcher sends what this answers.
package final class WebhookSendSlots<Item: Sendable>: Sendable {
    private struct State {
        var onWire = 0
        var waiting: [Item] = []
        var head = 0
    }

    package let capacity: Int
    private let state = Mutex<State>(State())

    package init(capacity: Int) { self.capacity = capacity }

    /// Takes a slot for `item` and answers true (send it now), or queues it and answers false.
    package func claim(_ item: Item) -> Bool {
        state.withLock { state in
            guard state.onWire < capacity else {
                state.waiting.append(item)
                return false
            }
            state.onWire += 1
            return true
        }
    }

    /// A send ended: answers the waiting item that takes its slot (send it now), or frees the slot.
    package func finished() -> Item? {
        state.withLock { state in
            guard state.head < state.waiting.count else {
                state.onWire -= 1
                return nil
            }
            let next = state.waiting[state.head]
            state.head += 1
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return next
        }
    }

    /// Removes and answers every waiting item (none of them was sent).
    package func drain() -> [Item] {
        state.withLock { state in
            defer {
                state.waiting.removeAll()
                state.head = 0
            }
            return Array(state.waiting[state.head...])
        }
    }

    package var onWire: Int { state.withLock { $0.onWire } }
    package var waiting: Int { state.withLock { $0.waiting.count - $0.head } }
}
