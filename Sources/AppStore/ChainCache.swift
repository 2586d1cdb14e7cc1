import COpenSSL
import Synchronization

/// Chains already validated, keyed by SHA-256 of their x5c leaf and intermediate, so a hit skips
/// certificate parsing and X509_verify_cert and keeps the parsed leaf key. Bounded (FIFO eviction).
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64

        /// Hashes the x5c entries' base64 text: equal text means equal certificates.
        init(leaf: String, intermediate: String) {
            var leaf = leaf, intermediate = intermediate
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            guard let ctx = EVP_MD_CTX_new() else { OpenSSLErrors.fatal("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(ctx) }
            EVP_DigestInit_ex(ctx, EVP_sha256(), nil)
            leaf.withUTF8 { _ = EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) }
            var separator: UInt8 = 0
            EVP_DigestUpdate(ctx, &separator, 1)
            intermediate.withUTF8 { _ = EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) }
            withUnsafeMutableBytes(of: &words) { buf in
                _ = EVP_DigestFinal_ex(ctx, buf.baseAddress!.assumingMemoryBound(to: UInt8.self), nil)
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
