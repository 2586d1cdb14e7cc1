import Testing
@testable import AppStore

@Suite struct AppStorePlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
