#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one place where a failed system call's `errno` is read and put into words, shared by every
/// target that calls the C library (HTTP, EventStore, Service, TestSupport) so they all say a
/// failure the same way. Take `last` right after the call that failed: anything in between (even
/// `close`) may overwrite `errno`.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `errno` value (`EEXIST`, `EADDRINUSE`, …).
    public let code: Int32

    public init(code: Int32) { self.code = code }

    /// The calling thread's `errno` now.
    public static var last: SystemCallError { SystemCallError(code: errno) }

    /// `strerror`'s words for the code, e.g. "No such file or directory".
    public var description: String { String(cString: strerror(code)) }
}
