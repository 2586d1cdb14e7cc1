import CLibPQ
import Glibc

/// One libpq connection. Not safe for concurrent use: one thread at a time (the pool enforces it).
///
/// In `.session` pool mode every `query`/`execute` is an automatically prepared statement (text
/// parameters and results), prepared once per connection and SQL text, then executed with
/// `PQexecPrepared`, and `session`'s settings are applied once at connect. In `.transaction` mode
/// (PgBouncer) statements are unnamed and the settings go with every transaction
/// (Connection+SessionSettings.swift).
public final class Connection: @unchecked Sendable {
    let handle: OpaquePointer  // PGconn*; only used inside methods of self
    /// The role and settings of every transaction, and the pool mode that says how to apply them.
    public let session: SessionSettings
    private var statements: [String: String] = [:]  // SQL text -> prepared statement name
    private var statementCounter = 0
    /// Set when a protocol exchange was abandoned half-way; the pool then discards the connection.
    var isPoisoned = false
    /// Inside `transaction`, until the body's first statement: BEGIN has not been sent yet and
    /// goes out together with that statement (one round trip fewer per transaction).
    var beginPending = false
    /// Inside `transaction`: true while its body runs.
    private var inTransaction = false
    /// Set when the body ended the transaction itself with `commit(after:)`.
    private var committedByBody = false
    /// More distinct SQL texts than this means SQL is being built dynamically; start over.
    private static let statementCacheLimit = 512
    /// When the prepared statements are next dropped, and the wait after that (doubling up to
    /// `planRefreshLimit`). PostgreSQL keeps a statement's generic plan until the tables' stats
    /// change: one made while a table was nearly empty (a new database's first seconds, before
    /// autovacuum has analyzed anything) scans the table sequentially, still when it has grown
    /// to 100,000 rows. Measured under group commit: 1,833 such scans of proj.chain_owners read
    /// 18 M rows in the first minute of the ingest bench. Re-preparing plans them anew.
    private var planRefreshAt = ContinuousClock.now + .seconds(5)
    private var planRefreshWait: Duration = .seconds(5)
    private static let planRefreshLimit: Duration = .seconds(600)

    /// Connects with a conninfo (`host=/tmp port=5432 dbname=x`) or URL (`postgresql://…`) string.
    /// `connectTimeout` (seconds) applies unless the string sets `connect_timeout` itself.
    public init(_ conninfo: String, connectTimeout: Int? = nil, session: SessionSettings = .direct)
        throws(DatabaseError)
    {
        var keywords: [String?] = []
        var values: [String?] = []
        if let connectTimeout {
            keywords.append("connect_timeout")
            values.append(String(connectTimeout))
        }
        // Entries after `dbname` override the expanded string, entries before it are overridden.
        keywords += ["dbname", "fallback_application_name", nil]
        values += [conninfo, "iap-ledger", nil]
        let connection = withCStringArray(keywords) { keys in
            withCStringArray(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let connection else { throw .unableToConnect("libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = DatabaseError.connectionMessage(connection)
            PQfinish(connection)
            throw .unableToConnect(message)
        }
        // Server NOTICEs (e.g. "role is already a member") would go to stderr by default.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        self.session = session
        if session.poolMode == .session, !session.isEmpty {
            try executeScript(session.script(local: false))
        }
    }

    deinit { PQfinish(handle) }

    /// Runs one statement with bound text parameters (`$1`, `$2`, … ; nil binds SQL NULL).
    public func query(_ sql: String, _ params: [String?] = []) throws(DatabaseError) -> Rows {
        if beginPending || !autocommitPrologue.isEmpty { return try pipeline([Statement(sql, params)])[0] }
        if session.poolMode == .transaction {
            let result = withCStringArray(params) { pointers in
                PQexecParams(handle, sql, Int32(params.count), nil, pointers, nil, nil, 0)
            }
            return try rows(from: result)
        }
        try forgetPlansIfDue()
        let name = try preparedName(for: sql)
        let result = withCStringArray(params) { pointers in
            PQexecPrepared(handle, name, Int32(params.count), pointers, nil, nil, 0)
        }
        return try rows(from: result)
    }

    /// Runs one statement that returns no rows; answers the number of affected rows.
    @discardableResult
    public func execute(_ sql: String, _ params: [String?] = []) throws(DatabaseError) -> Int {
        try query(sql, params).affectedRows
    }

    /// Runs a script of one or more statements with the simple protocol (no parameters).
    /// For migrations and transaction control only: never put values into `sql`.
    public func executeScript(_ sql: String) throws(DatabaseError) {
        _ = try rows(from: PQexec(handle, scriptPrologue() + sql))
    }

    /// Runs `body` inside BEGIN … COMMIT; any error thrown by `body` (or by COMMIT) rolls back
    /// and is rethrown. READ COMMITTED, the server default, which `EventStore.append` relies on.
    ///
    /// BEGIN is sent with the body's first statement, in the same round trip (a body that runs
    /// no statement opens no transaction). The body may end the transaction itself with
    /// `commit(after:)`, which sends its last statements and COMMIT in one round trip.
    @discardableResult
    public func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        precondition(PQtransactionStatus(handle) == PQTRANS_IDLE && !inTransaction, "transaction() cannot be nested")
        beginPending = true
        inTransaction = true
        committedByBody = false
        defer {
            beginPending = false
            inTransaction = false
        }
        do {
            let value = try body(self)
            if committedByBody || beginPending { return value }
            try throwIfAborted()
            try executeScript("COMMIT")
            return value
        } catch {
            beginPending = false
            rollbackIfNeeded()
            throw error
        }
    }

    /// Runs `statements`, then COMMIT, in one round trip (pipeline mode), ending the transaction
    /// that the enclosing `transaction` opened; answers the statements' results. If one fails,
    /// the rest and the COMMIT are not run: the error is thrown and `transaction` rolls back.
    /// It must be the body's last step: nothing may run on the connection after it, and an error
    /// the body threw after it would be reported for a transaction that did commit.
    @discardableResult
    public func commit(after statements: [Statement]) throws(DatabaseError) -> [Rows] {
        precondition(inTransaction && !committedByBody, "commit(after:) belongs inside transaction(), once")
        try throwIfAborted()
        var results = try pipeline(statements + [Statement("COMMIT")], chunkSize: statements.count + 1)
        guard PQtransactionStatus(handle) == PQTRANS_IDLE else {
            throw DatabaseError(sqlState: "XX000", message: "COMMIT did not end the transaction")
        }
        committedByBody = true
        results.removeLast()
        return results
    }

    /// COMMIT of an aborted transaction "succeeds" as ROLLBACK: never report success.
    private func throwIfAborted() throws(DatabaseError) {
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            throw DatabaseError(sqlState: "25P02", message: "current transaction is aborted; it was rolled back")
        }
    }

    /// False once libpq has seen the connection break.
    public var isHealthy: Bool { !isPoisoned && PQstatus(handle) == CONNECTION_OK }

    /// True when no transaction is open (what a pooled connection must be between uses).
    var isIdle: Bool { PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Rolls back an open or failed transaction; a broken connection is left to the pool.
    func rollbackIfNeeded() {
        let status = PQtransactionStatus(handle)
        guard status == PQTRANS_INTRANS || status == PQTRANS_INERROR else { return }
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    /// An idle connection has nothing to read; data (or EOF) means the server ended the session
    /// (e.g. a restart sent FATAL 57P01). Checked by the pool before handing the connection out.
    var hasUnexpectedInput: Bool {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return true }
        return poll(&descriptor, 1, 0) != 0
    }

    // MARK: - libpq plumbing (only called with `self` alive, so `handle` never dangles)

    /// Drops every prepared statement when the refresh is due or there are too many. Called
    /// before a round trip's statements are named, never between (a name taken would dangle).
    func forgetPlansIfDue() throws(DatabaseError) {
        guard !statements.isEmpty else { return }
        let now = ContinuousClock.now
        let due = now >= planRefreshAt
        guard due || statements.count >= Self.statementCacheLimit else { return }
        _ = try rows(from: PQexec(handle, "DEALLOCATE ALL"))
        statements.removeAll()
        if due {
            planRefreshWait = min(planRefreshWait * 2, Self.planRefreshLimit)
            planRefreshAt = now + planRefreshWait
        }
    }

    func preparedName(for sql: String) throws(DatabaseError) -> String {
        if let name = statements[sql] { return name }
        statementCounter += 1
        let name = "iap_\(statementCounter)"
        _ = try rows(from: PQprepare(handle, name, sql, 0, nil))
        statements[sql] = name
        return name
    }

    /// Converts a result to `Rows` or throws; always frees it.
    func rows(from result: OpaquePointer?) throws(DatabaseError) -> Rows {
        guard let result else { throw DatabaseError.from(result: nil, connection: handle) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY else {
            throw DatabaseError.from(result: result, connection: handle)
        }
        return Rows(result: result)
    }
}

extension Connection {
    /// Whether a server accepts connections at `conninfo` (no authentication is attempted).
    public static func ping(_ conninfo: String, timeout seconds: Int = 2) -> Bool {
        let keywords: [String?] = ["connect_timeout", "dbname", nil]
        let values: [String?] = [String(seconds), conninfo, nil]
        let answer = withCStringArray(keywords) { keys in
            withCStringArray(values) { vals in PQpingParams(keys, vals, 1) }
        }
        return answer == PQPING_OK
    }
}
