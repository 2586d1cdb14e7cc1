import EventStore
import Foundation
import Glibc
import Infrastructure
import SystemCalls

/// Who owns an embedded data directory. `serve` holds an exclusive lock on
/// `<data-dir>/iap-ledger.lock` for its lifetime, so a second `serve` on the same directory is
/// refused instead of stopping the first one's PostgreSQL; `keys` and `migrate` share a cluster
/// that a running `serve` started rather than starting (and then stopping) their own.
package final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }  // closing the descriptor releases the lock

    /// Lets another `serve` take the directory (the descriptor stays open until deinit).
    package func release() { _ = flock(descriptor, LOCK_UN) }

    /// Creates the directory if needed and takes the lock, or fails with one line naming the
    /// directory and the process holding it.
    package static func acquire(_ directory: String) throws(ServiceApp.StartupError) -> DataDirectoryLock {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .init(description: "data directory \(directory) is not a directory")
            }
        } else {
            var prefix = directory.hasPrefix("/") ? "" : "."
            for component in directory.split(separator: "/") {
                prefix += "/" + component
                if mkdir(prefix, 0o755) != 0, SystemCallError.last.code != EEXIST {
                    throw .init(
                        description: "cannot create data directory \(directory): \(prefix): \(SystemCallError.last)")
                }
            }
        }
        let path = directory + "/iap-ledger.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .init(description: "cannot use data directory \(directory): \(path): \(SystemCallError.last)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder =
                (try? String(contentsOfFile: path, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            close(descriptor)
            throw .init(
                description:
                    "data directory \(directory) is in use by another iap-ledger serve\(holder.isEmpty ? "" : " (pid \(holder))")"
            )
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return DataDirectoryLock(descriptor: descriptor)
    }

    /// The conninfo of a cluster already running in `directory` (started by a live `serve`) that
    /// answers right now, read from its `postmaster.pid`; nil when none does.
    package static func runningCluster(in directory: String) -> String? {
        guard let text = try? String(contentsOfFile: directory + "/pgdata/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 5, let pid = Int32(lines[0].trimmingCharacters(in: .whitespaces)),
            EmbeddedPostgres.isAlive(pid), let port = Int(lines[3].trimmingCharacters(in: .whitespaces))
        else { return nil }
        let socketDirectory = lines[4].trimmingCharacters(in: .whitespaces)
        guard !socketDirectory.isEmpty else { return nil }
        let conninfo = "host=\(quoted(socketDirectory)) port=\(port) user=postgres dbname=iap_ledger"
        return Connection.ping(conninfo, timeout: 2) ? conninfo : nil
    }

    private static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
