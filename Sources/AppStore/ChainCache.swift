import COpenSSL
import Synchronization

/// Chains already validated, keyed by SHA-256 of the JWS header (alg + x5c certificates), so a hit
/// skips header parsing, certificate parsing and X509_verify_cert and keeps the parsed leaf key.
/// Bounded (FIFO eviction).
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64

        /// Hashes the JWS header segment: it holds exactly `alg` and the x5c certificates, so equal
        /// text means the same certificates, and a hit skips decoding and parsing the header too.
        init(header: UnsafeBufferPointer<UInt8>) {
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { buf in
                _ = SHA256(header.baseAddress, header.count, buf.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            (a, b, c, d) = words
        }
    }

    struct Entry: Sendable {
        let leafKey: PublicKey
        /// Validity windows of leaf, intermediate and root: a hit must fall inside all of them.
        let windows: [ClosedRange<Int64>]

        func covers(_ time: Int64) -> Bool { windows.allSatisfy { $0.contains(time) } }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 64) { self.capacity = max(1, capacity) }

    func lookup(_ key: Key) -> Entry? { state.withLock { $0.entries[key] } }

    func insert(_ entry: Entry, for key: Key) {
        state.withLock { s in
            if s.entries.updateValue(entry, forKey: key) == nil {
                s.order.append(key)
                if s.order.count > capacity { s.entries[s.order.removeFirst()] = nil }
            }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
