import Testing
@testable import Ledger

@Suite struct LedgerPlaceholderTests {
    @Test func targetBuilds() { #expect(Bool(true)) }
}
