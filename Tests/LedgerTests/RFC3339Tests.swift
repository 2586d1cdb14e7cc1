import Testing
@testable import Ledger

@Suite struct RFC3339Tests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (1_767_225_600_000, "2026-01-01T00:00:00.000Z"),
        (1_798_538_400_123, "2026-12-29T10:00:00.123Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"), (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func formatsAndParsesBack(ms: Int64, text: String) {
        #expect(RFC3339.string(fromMilliseconds: ms) == text)
        #expect(RFC3339.milliseconds(from: text) == ms)
    }

    @Test func parsesOffsetsAndShortFractions() {
        #expect(RFC3339.milliseconds(from: "2026-01-01T01:00:00+01:00") == 1_767_225_600_000)
        #expect(RFC3339.milliseconds(from: "2026-01-01T00:00:00.5Z") == 1_767_225_600_500)
        #expect(RFC3339.milliseconds(from: "2026-13-01T00:00:00Z") == nil)
        #expect(RFC3339.milliseconds(from: "yesterday") == nil)
    }
}
