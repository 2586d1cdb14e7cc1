import JSON
import Testing

@Suite struct RFC3339Tests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_798_538_400_000, "2026-12-29T10:00:00.000Z"),
        (951_782_400_001, "2000-02-29T00:00:00.001Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func formatsAndParsesBackExactly(millis: Int64, text: String) {
        #expect(RFC3339.format(millis) == text)
        #expect(RFC3339.parse(text) == millis)
    }

    @Test func parsesOffsetsAndShortFractions() {
        #expect(RFC3339.parse("2026-12-29T11:00:00+01:00") == 1_798_538_400_000)
        #expect(RFC3339.parse("2026-12-29T10:00:00.5Z") == 1_798_538_400_500)
        #expect(RFC3339.parse("2026-12-29T10:00:00.123456Z") == 1_798_538_400_123)
    }

    @Test(arguments: [
        "", "2026-12-29", "2026-13-01T00:00:00Z", "2026-12-29T10:00:00", "2026-12-29T10:00:00.Z",
        "2026-12-29T25:00:00Z", "2026-12-29T10:00:00Zjunk",
    ])
    func rejectsWhatIsNotRFC3339(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func writerEmitsQuotedTimestamps() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.timestamp(0)
        writer.timestampOrNull(nil)
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"["1970-01-01T00:00:00.000Z",null]"#)
    }
}
