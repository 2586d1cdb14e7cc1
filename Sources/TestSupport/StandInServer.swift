import Foundation
import Glibc

/// A tiny HTTP/1.1 server on 127.0.0.1 (POSIX sockets) answering scripted responses per path, in order;
/// the last response of a path repeats. Stands in for Apple's verifyReceipt in tests.
public final class StandInServer: @unchecked Sendable {
    public typealias Response = (status: Int, body: String)
    private let fd: Int32
    public let port: UInt16
    private let lock = NSLock()
    private var scripts: [String: [Response]]
    private var hits: [String: Int] = [:]
    private var bodies: [String] = []

    public init(_ scripts: [String: [Response]]) throws {
        self.scripts = scripts
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: addr.sin_port)
        self.fd = fd
        Thread.detachNewThread { [self] in serve() }
    }

    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }
    public func hitCount(_ path: String) -> Int { lock.withLock { hits[path] ?? 0 } }
    public var requestBodies: [String] { lock.withLock { bodies } }

    /// Stops listening. Only the serving thread closes the descriptor, so its number cannot be
    /// recycled by another server while this thread might still call accept on it.
    public func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                close(fd)
                return
            }
            handle(client)
            close(client)
        }
    }

    private func handle(_ client: Int32) {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { return }
            data += buffer[0..<n]
            if headerEnd == nil, let r = Self.find([13, 10, 13, 10], in: data) {
                headerEnd = r + 4
                let head = String(decoding: data[0..<r], as: UTF8.self).lowercased()
                for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let h = headerEnd, data.count >= h + contentLength { break }
        }
        let head = String(decoding: data[0..<headerEnd!], as: UTF8.self)
        let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let response: Response = lock.withLock {
            hits[path, default: 0] += 1
            bodies.append(String(decoding: data[headerEnd!...], as: UTF8.self))
            guard var script = scripts[path], !script.isEmpty else { return (404, "{}") }
            let next = script.count > 1 ? script.removeFirst() : script[0]
            scripts[path] = script
            return next
        }
        let body = Array(response.body.utf8)
        let text =
            "HTTP/1.1 \(response.status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
            + "Connection: close\r\n\r\n"
        let out = Array(text.utf8) + body
        _ = out.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
