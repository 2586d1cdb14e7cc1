import Glibc
import JSON

/// A small blocking HTTP/1.1 client over one POSIX socket (one keep-alive connection), for
/// end-to-end tests of the service: each thread that needs its own connection makes its own client.
public final class ServiceHTTPClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
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

    private let port: Int
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    /// Sent with every request as `Authorization: Bearer <key>` unless a call overrides it.
    public var apiKey: String?

    public init(port: Int, apiKey: String? = nil) {
        self.port = port
        self.apiKey = apiKey
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    public func get(_ target: String, apiKey: String?? = .none, headers: [String: String] = [:]) throws -> Response {
        try request("GET", target, apiKey: apiKey, headers: headers)
    }

    /// POSTs `body` serialized as JSON.
    public func post(_ target: String, _ body: JSONValue, apiKey: String?? = .none, headers: [String: String] = [:])
        throws -> Response
    {
        try request("POST", target, apiKey: apiKey, headers: headers, body: body.serialized())
    }

    /// One request; `apiKey: .some(nil)` sends no Authorization header. Reconnects once when the
    /// server closed the kept-alive connection in between.
    public func request(
        _ method: String, _ target: String, apiKey: String?? = .none, headers: [String: String] = [:],
        body: [UInt8]? = nil
    ) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let key = apiKey ?? self.apiKey { head += "Authorization: Bearer \(key)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if body != nil || method == "POST" { head += "Content-Type: application/json\r\nContent-Length: \(body?.count ?? 0)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + (body ?? [])
        var attempt = 0
        while true {
            attempt += 1
            let reused = fd >= 0
            do {
                if fd < 0 { try connect() }
                try send(bytes)
                return try readResponse()
            } catch {
                closeSocket()
                // Only a kept-alive connection the server closed meanwhile is worth a second try.
                if !reused || attempt >= 2 { throw error }
            }
        }
    }

    private func connect() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket errno \(errno)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
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
            let err = errno
            Glibc.close(fd)
            throw Failure(description: "connect errno \(err)")
        }
        self.fd = fd
        buffer = []
    }

    private func closeSocket() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer = []
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send errno \(errno)") }
            offset += n
        }
    }

    private func readResponse() throws -> Response {
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
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while buffer.count < length { try fill() }
                let body = Array(buffer[..<length])
                buffer.removeFirst(length)
                if headers["connection"]?.lowercased() == "close" { closeSocket() }
                return Response(status: status, headers: headers, body: body)
            }
            try fill()
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw Failure(description: n == 0 ? "connection closed" : "recv errno \(errno)") }
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
