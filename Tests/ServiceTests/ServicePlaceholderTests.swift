import Testing
@testable import Service

@Suite struct ServicePlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
