import Synchronization

/// Request ids: the client's `X-Request-Id` when sane, else `<process prefix>-<counter>`.
/// The prefix tells processes apart in merged logs; the counter makes ids unique and cheap.
enum RequestID {
    private static let counter = Atomic<UInt64>(0)
    private static let prefix: String = {
        let random = UInt32.random(in: 0...UInt32.max)
        let hex = String(random, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }()

    static func next() -> String {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(n)
    }

    /// The client's id if it is 1…128 visible ASCII characters (it ends up in logs and headers).
    static func accept(_ candidate: String?) -> String? {
        guard let candidate, !candidate.isEmpty, candidate.utf8.count <= 128,
            candidate.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        return candidate
    }
}
