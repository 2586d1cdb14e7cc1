import Testing
@testable import HTTP

@Suite struct HTTPPlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
