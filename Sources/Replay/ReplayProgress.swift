import Foundation
import Infrastructure

/// Where a running replay is: the phase and events folded so far, out of an estimate.
public struct ReplayProgress: Sendable {
    public var phase: String
    public var events: Int
    /// The log's highest sequence number when the replay started (an estimate of the total:
    /// sequences may have gaps).
    public var estimatedTotal: Int
    public var elapsedSeconds: Double

    public var rate: Double { elapsedSeconds > 0 ? Double(events) / elapsedSeconds : 0 }
}

/// Renders progress for a person: a bar with rate and ETA on a terminal (redrawn in place),
/// plain lines at most once a second into a pipe or file.
public final class ReplayProgressPrinter: @unchecked Sendable {
    private let terminal: Bool
    private let write: (String) -> Void
    private var lastLine = Date.distantPast
    private var lastPhase = ""

    /// `descriptor`: where to draw (standard error by default, keeping stdout for the report).
    public init(descriptor: Int32 = 2) {
        terminal = isatty(descriptor) == 1
        write = { text in
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    public func callAsFunction(_ progress: ReplayProgress) {
        let now = Date()
        let phaseChanged = progress.phase != lastPhase
        if terminal {
            guard phaseChanged || now.timeIntervalSince(lastLine) >= 0.1 else { return }
            if phaseChanged && !lastPhase.isEmpty { write("\n") }
            write("\r\u{1B}[2K" + Self.bar(progress))
        } else {
            guard phaseChanged || now.timeIntervalSince(lastLine) >= 1 else { return }
            write(Self.line(progress) + "\n")
        }
        lastLine = now
        lastPhase = progress.phase
    }

    /// Ends the bar's line on a terminal.
    public func finish() {
        if terminal && !lastPhase.isEmpty { write("\n") }
    }

    package static func bar(_ p: ReplayProgress) -> String {
        let width = 30
        let fraction = p.estimatedTotal > 0 ? min(1, Double(p.events) / Double(p.estimatedTotal)) : 1
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        return "\(p.phase.padding(toLength: 9, withPad: " ", startingAt: 0)) \(bar) \(Int(fraction * 100))% "
            + "\(p.events)/\(p.estimatedTotal) events  \(Int(p.rate)) ev/s  ETA \(eta(p))"
    }

    package static func line(_ p: ReplayProgress) -> String {
        "replay \(p.phase): \(p.events)/\(p.estimatedTotal) events, \(Int(p.rate)) events/s, "
            + String(format: "%.1f s elapsed, ETA %@", p.elapsedSeconds, eta(p))
    }

    package static func eta(_ p: ReplayProgress) -> String {
        guard p.rate > 0, p.estimatedTotal > p.events else { return "0s" }
        let seconds = Double(p.estimatedTotal - p.events) / p.rate
        return seconds < 60
            ? String(format: "%.0fs", seconds)
            : String(format: "%.0fm%02.0fs", (seconds / 60).rounded(.down), seconds.truncatingRemainder(dividingBy: 60))
    }
}
