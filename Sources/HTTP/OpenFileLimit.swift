#if canImport(Glibc)
    import Glibc
#endif

/// Every HTTP connection, idle long polls included, holds a descriptor, and Debian's default
/// soft limit (1024) is below `Configuration.connectionLimit`: past it `accept` fails with
/// EMFILE and clients are refused. The hard limit is usually far higher and raising the soft
/// one to it needs no privilege (Go's runtime does the same at start-up).
public enum OpenFileLimit {
    /// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
    @discardableResult
    public static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
