import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' one way to pick a listen port for a server that is told its port ahead (the local
/// cluster's HAProxy, PgBouncer, PostgreSQL and instances, chromedriver, the testkit's stand-in),
/// chosen below the kernel's ephemeral range: a port in
/// it that was free when checked can be taken meanwhile as the local end of any outgoing
/// connection (a parallel test's client), and PgBouncer then fails with "Address already in
/// use" 20 s later (seen in CI).
public enum FreePorts {
    /// The first of `span` consecutive ports free on 127.0.0.1 now (one port by default).
    public static func consecutive(span: Int = 1) throws -> Int {
        let ceiling = min(ephemeralLow, 65_535) - span
        for _ in 0..<100 {
            let base = Int.random(in: 10_000...max(10_001, ceiling))
            if (base..<(base + span)).allSatisfy(isFree) { return base }
        }
        throw NoFreePorts(description: "no \(span) consecutive free ports below \(ceiling + span) on 127.0.0.1")
    }

    public struct NoFreePorts: Error, CustomStringConvertible {
        public let description: String
    }

    /// The low end of `net.ipv4.ip_local_port_range` (Linux's default 32768).
    static var ephemeralLow: Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32_768
    }

    static func isFree(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
