import Glibc

/// A tiny blocking HTTP/1.1 client over a POSIX socket, so tests control keep-alive exactly.
final class TestClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        var errno: Int32 = 0
    }

    struct Response {
        var status: Int
        var headers: [String: String]  // lower-cased names
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:port; fails with the errno text (e.g. ECONNREFUSED is 111).
    init(port: Int) throws(Failure) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket errno \(errno)") }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
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
            throw Failure(description: "connect errno \(err)", errno: err)
        }
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send errno \(errno)") }
            offset += n
        }
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Sends one request with `Content-Length` (when there is a body) and reads the response.
    func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws
        -> Response
    {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        return try readResponse()
    }

    /// Sends `body` with `Transfer-Encoding: chunked` in `chunkSize` pieces.
    func chunkedRequest(_ method: String, _ target: String, body: [UInt8], chunkSize: Int) throws -> Response {
        try send("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
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
    func readResponseHead() throws -> Response {
        var response = try readResponse(bodyless: true)
        response.body = []
        return response
    }

    func readResponse(bodyless: Bool = false) throws -> Response {
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

    /// True when the server closed the connection (EOF) within the receive timeout.
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
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
