import Glibc
import JSON
import SystemCalls

/// The one raw HTTP/1.1 client of the tests: one blocking POSIX socket to 127.0.0.1, so a test
/// controls keep-alive, framing and partial writes exactly (HTTPTests send malformed and
/// oversized requests byte by byte). `ServiceHTTPClient` builds the service's API calls on it.
public final class HTTPTestConnection {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        /// The `errno` of the failed call (e.g. ECONNREFUSED, 111), 0 when none failed.
        public var errno: Int32 = 0
        public init(description: String, errno: Int32 = 0) {
            self.description = description
            self.errno = errno
        }
    }

    public struct Response: Sendable {
        public var status: Int
        /// Lower-cased header names.
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
        /// The body parsed as JSON (`.null` when it is not JSON).
        public var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    }

    public let port: Int
    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:port; fails with the errno (e.g. ECONNREFUSED is 111). A read waits
    /// `receiveTimeout` seconds at most, so a server that never answers fails the test instead of
    /// hanging it.
    public init(port: Int, receiveTimeout: Int = 30) throws(Failure) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket errno \(SystemCallError.last.code)") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let failure = SystemCallError.last
            Glibc.close(fd)
            throw Failure(description: "connect errno \(failure.code)", errno: failure.code)
        }
        self.port = port
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else {
                let failure = SystemCallError.last
                throw Failure(description: "send errno \(failure.code)", errno: failure.code)
            }
            offset += n
        }
    }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Sends one request with these headers in this order, `Content-Length` when there is a body,
    /// and reads the response.
    public func request(
        _ method: String, _ target: String, orderedHeaders: [(name: String, value: String)], body: [UInt8]? = nil
    ) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in orderedHeaders { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        return try readResponse()
    }

    /// Sends one request with `Content-Length` (when there is a body) and reads the response.
    public func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8]? = nil)
        throws -> Response
    {
        try request(method, target, orderedHeaders: headers.map { ($0.key, $0.value) }, body: body)
    }

    /// Sends `body` with `Transfer-Encoding: chunked` in `chunkSize` pieces.
    public func chunkedRequest(_ method: String, _ target: String, body: [UInt8], chunkSize: Int) throws -> Response {
        try send("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nTransfer-Encoding: chunked\r\n\r\n")
        var offset = 0
        while offset < body.count {
            let end = min(offset + chunkSize, body.count)
            try send(Array(String(end - offset, radix: 16).utf8) + [13, 10] + Array(body[offset..<end]) + [13, 10])
            offset = end
        }
        try send("0\r\n\r\n")
        return try readResponse()
    }

    /// Reads a status line and headers only (for HEAD, whose Content-Length announces no body).
    public func readResponseHead() throws -> Response {
        var response = try readResponse(bodyless: true)
        response.body = []
        return response
    }

    public func readResponse(bodyless: Bool = false) throws -> Response {
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
                    throw Failure(description: "bad status line \(head)")
                }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
                }
                let length = bodyless ? 0 : Int(headers["content-length"] ?? "0") ?? 0
                while buffer.count < length { try fill() }
                let body = Array(buffer[..<length])
                buffer.removeFirst(length)
                return Response(status: status, headers: headers, body: body)
            }
            try fill()
        }
    }

    /// Shuts this side's writing (`shutdown(SHUT_WR)`, as `nc -N`, some proxies and HTTP/1.0
    /// clients do once the request is sent): the server reads end-of-file after the request.
    public func shutdownWrite() throws(Failure) {
        guard Glibc.shutdown(fd, Int32(SHUT_WR)) == 0 else {
            let failure = SystemCallError.last
            throw Failure(description: "shutdown errno \(failure.code)", errno: failure.code)
        }
    }

    /// Everything the server sends until it closes the connection (what was buffered first);
    /// fails when the receive timeout passes first.
    public func readUntilClosed() throws -> [UInt8] {
        var received = buffer
        buffer = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return received }
            guard n > 0 else {
                let failure = SystemCallError.last
                throw Failure(description: "recv errno \(failure.code)", errno: failure.code)
            }
            received.append(contentsOf: chunk[..<n])
        }
    }

    /// True when the server closed the connection (EOF) within the receive timeout.
    public func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else {
            if n == 0 { throw Failure(description: "connection closed") }
            let failure = SystemCallError.last
            throw Failure(description: "recv errno \(failure.code)", errno: failure.code)
        }
        buffer.append(contentsOf: chunk[..<n])
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }
}
