import Testing

@testable import Changes
@testable import Infrastructure
@testable import Service

/// The deliverer's slots: a finished send hands its slot to the next claimed delivery at once.
@Suite struct WebhookSendSlotsTests {
    @Test func claimsBeyondTheCapacityWaitAndTakeFreedSlotsInOrder() {
        let slots = WebhookSendSlots<Int>(capacity: 2)
        #expect(slots.claim(1))
        #expect(slots.claim(2))
        #expect(!slots.claim(3))
        #expect(!slots.claim(4))
        #expect(slots.onWire == 2 && slots.waiting == 2)
        #expect(slots.finished() == 3)  // 1 ended: 3 takes its slot, still 2 on the wire
        #expect(slots.finished() == 4)
        #expect(slots.onWire == 2 && slots.waiting == 0)
        #expect(slots.finished() == nil)  // nothing waits: the slot is freed
        #expect(slots.onWire == 1)
        #expect(slots.claim(5))
        #expect(!slots.claim(6))
    }

    @Test func drainAnswersOnlyWhatWasNeverSent() {
        let slots = WebhookSendSlots<Int>(capacity: 1)
        #expect(slots.claim(1))
        for item in 2...4 { #expect(!slots.claim(item)) }
        #expect(slots.finished() == 2)
        #expect(slots.drain() == [3, 4])
        #expect(slots.waiting == 0 && slots.onWire == 1)
        #expect(slots.finished() == nil)
        #expect(slots.onWire == 0)
        #expect(slots.claim(5))  // the queue works again after a drain
    }
}
