import EventStore
import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

@Suite struct ReplayHarnessTests {
    @Test func reportJSONCarriesTheAPIFields() throws {
        var report = ReplayReport(dryRun: true, projections: ["users"])
        report.events = 10
        report.durationMs = 5
        report.changedUsers = [.init(userId: "u-1", fields: ["entitlements"], before: .object([:]), after: nil)]
        let json = try JSONValue.parse(report.jsonBytes())
        #expect(json["events"]?.int64Value == 10)
        #expect(json["durationMs"]?.int64Value == 5)
        #expect(json["changedUsers"]?.arrayValue?.first?["userId"]?.stringValue == "u-1")
        #expect(json["eventsPerSecond"]?.int64Value == 2000)
    }

    @Test func copyTextRowsSplitIntoFieldsUnescapedOnRead() {
        var text: [UInt8] = []
        CopyText.escape("user\t1", into: &text)
        text += Array("\t42\t-7\t".utf8)
        let document = Array("{\"a\":\"x\\\\y\nz\"}".utf8)
        CopyText.escape(bytes: document, into: &text)
        text += Array("\nu2\t1\t2\t{}\n".utf8)
        var rows: [(String, Int64, Int64, [UInt8])] = []
        CopyText.forEachRow(text) { buffer, fields in
            #expect(fields.count == 4)
            rows.append(
                (
                    CopyText.string(buffer, fields[0]), CopyText.integer(buffer, fields[1]),
                    CopyText.integer(buffer, fields[2]), CopyText.field(buffer, fields[3])
                ))
        }
        #expect(rows.count == 2)
        #expect(rows.first?.0 == "user\t1")
        #expect(rows.first?.1 == 42)
        #expect(rows.first?.2 == -7)
        #expect(rows.first?.3 == document)
        #expect(rows.last?.0 == "u2")
        #expect(rows.last?.3 == Array("{}".utf8))
    }

    @Test func copyTextRoundTripsEscapes() {
        var out: [UInt8] = []
        CopyText.escape("a\\b\tc\nd", into: &out)
        let back = out.withUnsafeBufferPointer { CopyText.unescape($0) }
        #expect(String(decoding: back, as: UTF8.self) == "a\\b\tc\nd")
    }

    @Test func progressShowsRateAndETA() {
        let progress = ReplayProgress(phase: "read", events: 250_000, estimatedTotal: 1_000_000, elapsedSeconds: 1)
        let bar = ReplayProgressPrinter.bar(progress)
        #expect(bar.contains("25%") && bar.contains("250000 ev/s") && bar.contains("ETA 3s"))
        let line = ReplayProgressPrinter.line(progress)
        #expect(line == "replay read: 250000/1000000 events, 250000 events/s, 1.0 s elapsed, ETA 3s")
    }
}
