import Foundation

/// What `eventually` throws when its condition never held: what was awaited, for how long, and
/// the condition's last error if it threw.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let description: String
}

/// The tests' one wait: polls `condition` every `interval` seconds until it holds, and throws
/// `WaitTimedOut` with `what` (what was awaited, or what is wrong while it is not) once `seconds`
/// pass without it. The deadline bounds a failure, it is not a timing assertion, so it is
/// generous; a passing test waits only as long as the condition takes. A condition that throws
/// counts as "not yet" (its last error is reported). `try? eventually(…)` is a best-effort wait
/// whose caller checks the outcome itself (to report more than the condition knows).
public func eventually(
    _ what: @autoclosure () -> String, within seconds: Double = 60, every interval: Double = 0.05,
    _ condition: () throws -> Bool
) throws {
    let deadline = Date().addingTimeInterval(seconds)
    var lastError: Error?
    while true {
        do {
            if try condition() { return }
            lastError = nil
        } catch {
            lastError = error
        }
        guard Date() < deadline else {
            let cause = lastError.map { " (last error: \($0))" } ?? ""
            throw WaitTimedOut(description: "gave up after \(seconds) s: \(what())\(cause)")
        }
        Thread.sleep(forTimeInterval: interval)
    }
}
