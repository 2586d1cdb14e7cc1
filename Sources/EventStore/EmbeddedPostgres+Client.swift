import Glibc

extension EmbeddedPostgres {
    /// The absolute path of a PostgreSQL client program (`psql`), looked up like the server
    /// programs: `IAP_LEDGER_PG_BINDIR`, Debian's per-version directories (newest first), then
    /// PATH. Nil when it is not installed (Debian: the `postgresql-client` package).
    public static func clientProgram(_ name: String) -> String? {
        var directories: [String] = []
        if let bindir = getenv("IAP_LEDGER_PG_BINDIR") { directories.append(String(cString: bindir)) }
        if let versions = listDirectory("/usr/lib/postgresql") {
            directories += versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        }
        if let path = getenv("PATH") { directories += String(cString: path).split(separator: ":").map(String.init) }
        directories += ["/usr/local/pgsql/bin", "/usr/pgsql/bin"]
        return Subprocess.find(name, in: directories)
    }
}
