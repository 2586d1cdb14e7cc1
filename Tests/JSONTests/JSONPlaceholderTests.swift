import Testing
@testable import JSON

@Suite struct JSONPlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
