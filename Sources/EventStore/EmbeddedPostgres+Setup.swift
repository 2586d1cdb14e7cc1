import Glibc
import SystemCalls

extension EmbeddedPostgres {
    /// Where the PostgreSQL programs are and how to run them (as `postgres` when we are root).
    struct Tools: Sendable {
        var initdb: String
        var pgCtl: String
        var runuser: String?  // set when we are root

        static func locate() throws(EmbeddedPostgresError) -> Tools {
            var directories: [String] = []
            if let bindir = getenv("IAP_LEDGER_PG_BINDIR") { directories.append(String(cString: bindir)) }
            // Debian keeps the server programs out of PATH, one directory per major version.
            if let versions = listDirectory("/usr/lib/postgresql") {
                let sorted = versions.compactMap(Int.init).sorted(by: >)
                directories += sorted.map { "/usr/lib/postgresql/\($0)/bin" }
            }
            if let path = getenv("PATH") { directories += String(cString: path).split(separator: ":").map(String.init) }
            directories += ["/usr/local/pgsql/bin", "/usr/pgsql/bin"]
            guard let initdb = Subprocess.find("initdb", in: directories) else {
                throw EmbeddedPostgresError(
                    .notInstalled,
                    "PostgreSQL's initdb was not found: install the `postgresql` package (apt-get install postgresql)")
            }
            let bindir = String(initdb.dropLast("/initdb".count))
            guard let pgCtl = Subprocess.find("pg_ctl", in: [bindir] + directories) else {
                throw EmbeddedPostgresError(
                    .notInstalled,
                    "PostgreSQL's pg_ctl was not found next to \(initdb): install the `postgresql` package")
            }
            var runuser: String? = nil
            if geteuid() == 0 {
                guard getpwnam(EmbeddedPostgres.superuser) != nil else {
                    throw EmbeddedPostgresError(
                        .notInstalled,
                        "running as root needs the `postgres` OS user (created by the `postgresql` package)")
                }
                guard let found = Subprocess.find("runuser", in: ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) else {
                    throw EmbeddedPostgresError(.notInstalled, "running as root needs `runuser` (util-linux)")
                }
                runuser = found
            }
            return Tools(initdb: initdb, pgCtl: pgCtl, runuser: runuser)
        }

        /// Runs a PostgreSQL program, through `runuser -u postgres --` when we are root.
        func run(_ argv: [String]) -> Subprocess.Outcome {
            guard let runuser else { return Subprocess.run(argv) }
            return Subprocess.run([runuser, "-u", EmbeddedPostgres.superuser, "--"] + argv)
        }

        /// Gives `path` to the `postgres` OS user when we are root.
        func chownToPostgres(_ path: String) -> Bool {
            guard runuser != nil, let user = getpwnam(EmbeddedPostgres.superuser) else { return true }
            return chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
        }
    }

    /// Creates the data directory (and parents), makes it private to the server's OS user and
    /// checks that user can write it. Returns the absolute path.
    static func prepareDirectory(_ path: String, tools: Tools) throws(EmbeddedPostgresError) -> String {
        guard !path.isEmpty else { throw EmbeddedPostgresError(.dataDirectory, "the data directory path is empty") }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0, SystemCallError.last.code != EEXIST {
                throw EmbeddedPostgresError(
                    .dataDirectory, "cannot create data directory \(path): \(prefix): \(SystemCallError.last)")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw EmbeddedPostgresError(.dataDirectory, "data directory \(path) is not a directory")
        }
        guard let resolved = realpath(path, nil) else {
            throw EmbeddedPostgresError(
                .dataDirectory, "cannot resolve data directory \(path): \(SystemCallError.last)")
        }
        let absolute = String(cString: resolved)
        free(resolved)
        guard access(absolute, R_OK | W_OK | X_OK) == 0 else {
            throw EmbeddedPostgresError(
                .dataDirectory,
                "data directory \(absolute) is not readable and writable: \(SystemCallError.last)")
        }
        guard tools.chownToPostgres(absolute), chmod(absolute, 0o700) == 0 else {
            throw EmbeddedPostgresError(
                .dataDirectory,
                "cannot give data directory \(absolute) to the postgres user: \(SystemCallError.last)")
        }
        if tools.runuser != nil {
            // A parent directory that `postgres` cannot search (e.g. /root) fails here, clearly.
            let probe = tools.run(["/usr/bin/test", "-w", absolute, "-a", "-x", absolute])
            guard probe.succeeded else {
                throw EmbeddedPostgresError(
                    .dataDirectory,
                    "data directory \(absolute) is not writable by the postgres OS user (is every parent directory searchable?)"
                )
            }
        }
        return absolute
    }

    /// A postmaster.pid left by a killed run: stop the server if it still runs in this cluster
    /// (its working directory is the cluster), otherwise delete the stale file.
    static func stopLeftoverServer(
        cluster: String, tools: Tools, log: (String) -> Void
    ) throws(EmbeddedPostgresError) {
        guard let pid = postmasterPID(cluster: cluster) else { return }
        if isAlive(pid), workingDirectory(of: pid) == cluster {
            log("stopping PostgreSQL \(pid) left running in \(cluster)")
            let result = tools.run([tools.pgCtl, "stop", "-w", "-t", "60", "-m", "fast", "-D", cluster])
            guard result.succeeded else {
                throw EmbeddedPostgresError(
                    .start,
                    "a PostgreSQL server (\(pid)) already runs in \(cluster) and did not stop: \(lastLines(result.output, 2))"
                )
            }
        } else {
            log("removing stale \(cluster)/postmaster.pid (pid \(pid) is gone)")
            unlink(cluster + "/postmaster.pid")
        }
    }

    /// The PID on the first line of postmaster.pid.
    static func postmasterPID(cluster: String) -> Int32? {
        guard let text = Subprocess.readFile(cluster + "/postmaster.pid"),
            let first = text.split(separator: "\n").first
        else { return nil }
        return Int32(first.trimmingCharacters(in: " "))
    }

    static func workingDirectory(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(pid)/cwd", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    static func makeShortSocketDirectory(tools: Tools) throws(EmbeddedPostgresError) -> String {
        var template = Array("/tmp/iapl-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw EmbeddedPostgresError(
                .dataDirectory, "cannot create a socket directory in /tmp: \(SystemCallError.last)")
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard tools.chownToPostgres(path) else {
            throw EmbeddedPostgresError(.dataDirectory, "cannot give \(path) to the postgres user")
        }
        return path
    }

    static func listDirectory(_ path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// The last `count` non-empty lines of `text`, joined into one line.
func lastLines(_ text: String, _ count: Int) -> String {
    let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    return lines.suffix(count).joined(separator: " | ")
}

/// A word for `/bin/sh` (pg_ctl passes `-o` through the shell).
func shellQuoted(_ word: String) -> String {
    "'" + word.replacingAll("'", with: "'\\''") + "'"
}

/// A conninfo value in single quotes (backslash escapes `\` and `'`).
func conninfoQuoted(_ value: String) -> String {
    "'" + value.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'") + "'"
}

/// An SQL identifier in double quotes, for the few places where identifiers cannot be bound.
func quotedIdentifier(_ name: String) -> String {
    "\"" + name.replacingAll("\"", with: "\"\"") + "\""
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }

    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self {
            if character == target { out += replacement } else { out.append(character) }
        }
        return out
    }
}
