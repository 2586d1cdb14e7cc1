import COpenSSL
import Glibc
import Synchronization

/// Chains already validated, keyed by the JWS header segment (alg + x5c certificates), so a hit
/// skips header parsing, certificate parsing and X509_verify_cert and keeps the parsed leaf key.
/// Bounded (FIFO eviction).
///
/// A lookup hashes only a bounded sample of the header with Swift's `Hasher` (the header is ~3.5 KB
/// of x5c: hashing all of it with SHA-256 cost ~1 µs per verification), then compares the FULL
/// header bytes against each entry of that bucket, so a hit is exactly the header that was
/// validated. Entries are only inserted after a successful validation.
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let count: Int
        let sample: Int

        /// Hashes the segment's length and its first and last 256 bytes (where the leaf's serial,
        /// validity and the chain's tail differ); equality of the whole segment is checked separately.
        init(header: UnsafeBufferPointer<UInt8>) {
            count = header.count
            var hasher = Hasher()
            let head = min(header.count, 256)
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(header)[0..<head]))
            let tail = max(head, header.count - 256)
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(header)[tail...]))
            sample = hasher.finalize()
        }
    }

    final class Entry: Sendable {
        let leafKey: PublicKey
        /// Validity windows of leaf, intermediate and root: a hit must fall inside all of them.
        let windows: [ClosedRange<Int64>]
        /// The header segment this chain was validated from (compared in full on every lookup).
        let header: [UInt8]
        /// SHA-256 state after `header` + ".": the signing input's digest only hashes the payload part.
        let headerDigest: SHA256Prefix

        init(leafKey: PublicKey, windows: [ClosedRange<Int64>], header: UnsafeBufferPointer<UInt8>) {
            self.leafKey = leafKey
            self.windows = windows
            self.header = Array(header)
            var prefix = self.header
            prefix.append(UInt8(ascii: "."))
            headerDigest = prefix.withUnsafeBufferPointer { SHA256Prefix($0) }
        }

        func covers(_ time: Int64) -> Bool { windows.allSatisfy { $0.contains(time) } }

        func matches(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
            header.count == segment.count
                && header.withUnsafeBufferPointer { mine in
                    segment.count == 0 || memcmp(mine.baseAddress!, segment.baseAddress!, segment.count) == 0
                }
        }
    }

    private struct State {
        var entries: [Key: [Entry]] = [:]
        var order: [(Key, Entry)] = []
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 64) { self.capacity = max(1, capacity) }

    func lookup(_ header: UnsafeBufferPointer<UInt8>) -> Entry? {
        let key = Key(header: header)
        let bucket = state.withLock { $0.entries[key] }
        return bucket?.first { $0.matches(header) }
    }

    func insert(_ entry: Entry) {
        let key = entry.header.withUnsafeBufferPointer { Key(header: $0) }
        state.withLock { s in
            var bucket = s.entries[key] ?? []
            if let same = bucket.firstIndex(where: { $0.header == entry.header }) {
                // Re-validated (e.g. at another date): replace, keep its place in the FIFO order.
                bucket[same] = entry
                s.entries[key] = bucket
                if let at = s.order.firstIndex(where: { $0.1.header == entry.header }) { s.order[at].1 = entry }
                return
            }
            bucket.append(entry)
            s.entries[key] = bucket
            s.order.append((key, entry))
            if s.order.count > capacity {
                let (oldKey, old) = s.order.removeFirst()
                s.entries[oldKey]?.removeAll { $0 === old }
                if s.entries[oldKey]?.isEmpty == true { s.entries[oldKey] = nil }
            }
        }
    }

    var count: Int { state.withLock { $0.order.count } }
}

/// A SHA-256 computation that has already absorbed a fixed prefix (OpenSSL's EVP digest state,
/// copied per use): the JWS signing input is `header.payload`, and the header repeats.
final class SHA256Prefix: @unchecked Sendable {
    private let ctx: OpaquePointer
    /// Fetched once: `SHA256()` and `EVP_DigestInit_ex(EVP_sha256())` look the digest up in the
    /// provider on every call (OpenSSL 3.0).
    nonisolated(unsafe) private static let md: OpaquePointer = {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { OpenSSLErrors.fatal("EVP_MD_fetch SHA256") }
        return md
    }()

    init(_ prefix: UnsafeBufferPointer<UInt8>) {
        guard let ctx = EVP_MD_CTX_new() else { OpenSSLErrors.fatal("EVP_MD_CTX_new") }
        guard EVP_DigestInit_ex(ctx, Self.md, nil) == 1,
            EVP_DigestUpdate(ctx, prefix.baseAddress, prefix.count) == 1
        else { OpenSSLErrors.fatal("SHA-256 of the header") }
        self.ctx = ctx
    }
    deinit { EVP_MD_CTX_free(ctx) }

    /// SHA-256 of prefix ‖ `rest` into `out` (32 bytes). The shared state is only read (copied).
    func digest(appending rest: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) {
        withExtendedLifetime(self) {
            guard let work = EVP_MD_CTX_new() else { OpenSSLErrors.fatal("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(work) }
            var length: UInt32 = 0
            guard EVP_MD_CTX_copy_ex(work, ctx) == 1,
                EVP_DigestUpdate(work, rest.baseAddress, rest.count) == 1,
                EVP_DigestFinal_ex(work, out, &length) == 1, length == 32
            else { OpenSSLErrors.fatal("SHA-256 of the signing input") }
        }
    }
}
