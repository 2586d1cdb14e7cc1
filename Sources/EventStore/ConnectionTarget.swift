import CLibPQ

/// Where a conninfo string (key=value or `postgresql://` URI) points, without its password:
/// what a command may print to say which database it uses. Parsed by libpq itself, so the
/// answer is what libpq will connect to.
public struct ConnectionTarget: Sendable, CustomStringConvertible {
    public var user: String?
    public var host: String?
    public var port: String?
    public var database: String?

    /// Nil when libpq cannot parse `conninfo`.
    public init?(conninfo: String) {
        guard let options = Self.parse(conninfo) else { return nil }
        for option in options {
            switch option.keyword {
            case "user": user = option.value
            case "host": host = option.value
            case "hostaddr": host = host ?? option.value
            case "port": port = option.value
            case "dbname": database = option.value
            default: break  // password and the rest stay unsaid
            }
        }
    }

    /// The libpq environment variables (PGHOST, PGPASSWORD, …) that point a libpq program such
    /// as psql where `conninfo` points, so the conninfo (and a password in it) never sits on a
    /// command line that `ps` shows. Nil when libpq cannot parse it, or when it sets an option
    /// that has no environment variable.
    public static func environment(for conninfo: String) -> [String: String]? {
        guard let options = parse(conninfo) else { return nil }
        var variables: [String: String] = [:]
        for option in options {
            guard let name = option.environmentVariable else { return nil }
            variables[name] = option.value
        }
        return variables
    }

    /// The options `conninfo` sets (non-empty values only), as libpq parses them.
    private static func parse(_ conninfo: String) -> [(keyword: String, value: String, environmentVariable: String?)]? {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var set: [(keyword: String, value: String, environmentVariable: String?)] = []
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let raw = cursor.pointee.val, raw.pointee != 0 {
                set.append(
                    (String(cString: keyword), String(cString: raw), cursor.pointee.envvar.map { String(cString: $0) }))
            }
            cursor += 1
        }
        return set
    }

    /// `iap_ledger on 10.0.0.5:5432 (user app)`, each part only when set (libpq's defaults
    /// otherwise); a Unix-socket host is its directory.
    public var description: String {
        var text = (database ?? user ?? "the default database") + " on " + (host ?? "the default socket")
        if let port { text += ":" + port }
        if let user { text += " (user \(user))" }
        return text
    }
}
