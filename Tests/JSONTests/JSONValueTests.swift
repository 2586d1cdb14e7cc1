import JSON
import TestSupport
import Testing

@Suite struct JSONValueTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONValue.parse(#"{"a":[1,-2.5e3,true,false,null],"s":"x\"y\\z\u00e9\ud83d\ude00","o":{}}"#)
        #expect(value["a"]?.arrayValue?.count == 5)
        #expect(value["a"]?.arrayValue?[1].doubleValue == -2500)
        #expect(value["a"]?.arrayValue?[2].boolValue == true)
        #expect(value["a"]?.arrayValue?[4].isNull == true)
        #expect(value["s"]?.stringValue == "x\"y\\zé😀")
        #expect(value["o"]?.objectValue?.isEmpty == true)
    }

    @Test func keepsLargeIntegersExactAndTruncatesFractionalMilliseconds() throws {
        let value = try JSONValue.parse(#"{"id":9223372036854775807,"date":1697679936049.7297,"neg":-62135769600000}"#)
        #expect(value["id"]?.int64Value == Int64.max)
        #expect(value["date"]?.int64Value == 1_697_679_936_049)
        #expect(value["neg"]?.int64Value == -62_135_769_600_000)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "tru", "01", "1.", "-", "\"abc", "\"\\x\"", "{\"a\":1}x",
        "\"\u{01}\"", "\"\\ud800\"", "[1 2]", "{1:2}", "nul",
    ])
    func rejectsMalformedDocuments(text: String) {
        #expect(throws: JSONError.self) { try JSONValue.parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONError.self) { try JSONValue.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test func keepsNestedObjectMembersApartAndTheLastDuplicateWins() throws {
        let value = try JSONValue.parse(#"{"a":1,"o":{"a":2,"p":{"a":3},"b":4},"a":5,"z":"é€😀"}"#)
        #expect(value["a"]?.int64Value == 5)
        #expect(value["o"]?.objectValue?.count == 3)
        #expect(value["o"]?["a"]?.int64Value == 2)
        #expect(value["o"]?["p"]?["a"]?.int64Value == 3)
        #expect(value["o"]?["b"]?.int64Value == 4)
        #expect(value["z"]?.stringValue == "é€😀")
        #expect(value.objectValue?.count == 3)
    }

    @Test func rejectsInvalidUTF8AfterASCIIAndInMemberNames() {
        #expect(throws: JSONError.self) { try JSONValue.parse([0x22, 0x61, 0x62, 0xC3, 0x22]) }
        #expect(throws: JSONError.self) { try JSONValue.parse([0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D]) }
    }

    @Test func rejectsPathologicalNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
    }

    @Test func roundTripsThroughTheWriter() throws {
        let original: JSONValue = ["b": [1, "two", nil, true], "a": "line\nbreak\t\u{01}", "c": ["x": -7]]
        let bytes = original.serialized(sortedKeys: true)
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"a":"line\nbreak\t\u0001","b":[1,"two",null,true],"c":{"x":-7}}"#)
        #expect(try JSONValue.parse(bytes) == original)
    }

    @Test func writerPlacesCommasAndKeys() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("n")
        writer.int(Int64.min)
        writer.key("list")
        writer.beginArray()
        writer.int(0)
        writer.double(1.5)
        writer.stringOrNull(nil)
        writer.endArray()
        writer.key("empty")
        writer.beginObject()
        writer.endObject()
        writer.key("raw")
        writer.raw(Array("{\"k\":1}".utf8))
        writer.endObject()
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == #"{"n":-9223372036854775808,"list":[0,1.5,null],"empty":{},"raw":{"k":1}}"#)
    }

    @Test func fuzzedInputNeverCrashes() {
        var generator = SplitMix64(seed: 42)
        let seed = Array(#"{"a":[1,2,{"b":"c\u0041"}],"d":-1.5e-3,"e":null}"#.utf8)
        for _ in 0..<5_000 {
            var mutated = seed
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let position = Int(generator.next() % UInt64(mutated.count))
                mutated[position] = UInt8(truncatingIfNeeded: generator.next())
            }
            let cut = Int(generator.next() % UInt64(mutated.count + 1))
            _ = try? JSONValue.parse(mutated[..<cut])
        }
    }
}
