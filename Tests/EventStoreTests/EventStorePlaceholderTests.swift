import Testing
@testable import EventStore

@Suite struct EventStorePlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
