import Foundation
import JSON
import Synchronization
import TestSupport

/// Pre-minted POST /v1/purchases bodies for the ingest load: each a distinct signed transaction
/// (fresh transaction id, test PKI) claimed by a distinct user `bench-user-<n>`, one JSON per line.
enum PurchaseMinting {
    /// Writes `count` bodies to `path`; signing runs on every core (it is not what is measured).
    static func write(count: Int, to path: String) throws {
        let vectors = TestVectors.shared
        let chunk = 1000
        let chunks = (count + chunk - 1) / chunk
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? file.close() }
        var done = 0
        let batch = 16  // chunks signed in parallel before being written in order
        var start = 0
        while start < chunks {
            let end = min(start + batch, chunks)
            let first = start
            let parts = Mutex([Int: [UInt8]]())
            DispatchQueue.concurrentPerform(iterations: end - start) { offset in
                let index = first + offset
                var bytes: [UInt8] = []
                bytes.reserveCapacity(chunk * 3000)
                for n in (index * chunk)..<min(count, (index + 1) * chunk) {
                    bytes += body(userId: "bench-user-\(n)", vectors: vectors)
                    bytes.append(UInt8(ascii: "\n"))
                }
                parts.withLock { $0[offset] = bytes }
            }
            let ordered = parts.withLock { $0 }
            for offset in 0..<(end - first) {
                file.write(Data(ordered[offset]!))
                done += 1
            }
            start = end
        }
    }

    /// One POST /v1/purchases body: a new signed transaction (fresh ids) for `userId`.
    static func body(userId: String, vectors: TestVectors = .shared) -> [UInt8] {
        var writer = JSONWriter(capacity: 3000)
        writer.beginObject()
        writer.key("userId")
        writer.string(userId)
        writer.key("signedTransaction")
        writer.string(vectors.signedTransaction())
        writer.endObject()
        return writer.bytes
    }
}
