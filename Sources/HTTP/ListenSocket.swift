import SystemCalls

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Binds and listens ourselves (instead of letting MHD do it) so that the address is explicit
/// (MHD alone binds 0.0.0.0) and a failure comes back as errno, i.e. "port N is already in use".
enum ListenSocket {
    /// Returns a listening, non-blocking socket and the port it is bound to.
    static func open(host: String, port: Int, backlog: Int) throws(HTTPServerError) -> (fd: Int32, port: Int) {
        guard (0...65535).contains(port) else {
            throw HTTPServerError(.socket, "port \(port) is not between 0 and 65535")
        }
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = in_addr()
        var v6 = in6_addr()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4) == 1 {
            family = AF_INET
        } else if inet_pton(AF_INET6, literal, &v6) == 1 {
            family = AF_INET6
        } else {
            throw HTTPServerError(.invalidHost, "host \"\(host)\" is not an IPv4 or IPv6 address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError(.socket, "socket(): \(SystemCallError.last)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))

        let bound: Int32
        if family == AF_INET {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr = v4
            bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        } else {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            addr.sin6_addr = v6
            bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        if bound != 0 {
            let failure = SystemCallError.last
            close(fd)
            switch failure.code {
            case EADDRINUSE: throw HTTPServerError(.portInUse, "port \(port) is already in use")
            case EADDRNOTAVAIL: throw HTTPServerError(.invalidHost, "address \(host) is not available on this machine")
            case EACCES: throw HTTPServerError(.socket, "no permission to bind port \(port)")
            default: throw HTTPServerError(.socket, "bind to \(host):\(port): \(failure)")
            }
        }
        guard listen(fd, Int32(clamping: backlog)) == 0 else {
            let failure = SystemCallError.last
            close(fd)
            throw HTTPServerError(.socket, "listen on \(host):\(port): \(failure)")
        }
        // Several MHD workers accept on this one socket; a blocking accept would stall the losers.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, boundPort(fd) ?? port)
    }

    private static func boundPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        return withUnsafePointer(to: &storage) { p -> Int in
            if Int32(p.pointee.ss_family) == AF_INET {
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin_port))
                }
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin6_port))
            }
        }
    }
}
