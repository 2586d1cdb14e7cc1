import CLibPQ

extension Connection {
    /// One statement of a pipelined batch.
    public struct Statement: Sendable {
        public var sql: String
        public var params: [String?]
        public init(_ sql: String, _ params: [String?] = []) {
            self.sql = sql
            self.params = params
        }
    }

    /// Runs `statements` in libpq pipeline mode (one round trip per `chunkSize` statements instead
    /// of one each; measured 14–23× faster for 1000 small statements). Results come back in order.
    /// Outside an explicit transaction each chunk is one implicit transaction. The first failure
    /// aborts the rest of its chunk and is thrown after the chunk has been drained.
    /// Chunks bound how much the server writes before we read, so blocking mode cannot deadlock.
    ///
    /// Inside `transaction` before its first statement, the deferred BEGIN (and in transaction
    /// pool mode the settings prologue) goes out first, in the same round trip. In transaction
    /// pool mode outside a transaction every chunk starts with the prologue: each chunk is its
    /// own implicit transaction, possibly on another server session.
    public func pipeline(_ statements: [Statement], chunkSize: Int = 256) throws(DatabaseError) -> [Rows] {
        let lead: [Statement] = beginPending ? [Statement("BEGIN")] + transactionPrologue : []
        let perChunk: [Statement] = beginPending ? [] : autocommitPrologue
        // Session mode: every statement named and prepared before the pipeline starts (PQprepare
        // is a round trip of its own); transaction mode: unnamed, parsed with each execution.
        var leadNames: [String?] = []
        var names: [String?] = []
        if session.poolMode == .session {
            try forgetPlansIfDue()
            for statement in lead { leadNames.append(try preparedName(for: statement.sql)) }
            names.reserveCapacity(statements.count)
            for statement in statements { names.append(try preparedName(for: statement.sql)) }
        } else {
            leadNames = Array(repeating: nil, count: lead.count)
            names = Array(repeating: nil, count: statements.count)
        }
        // From here on BEGIN is as good as sent: on any failure the caller rolls back.
        beginPending = false
        guard PQenterPipelineMode(handle) == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
        defer { if PQexitPipelineMode(handle) != 1 { isPoisoned = true } }
        var results: [Rows] = []
        results.reserveCapacity(statements.count)
        var start = 0
        var first = true
        // A BEGIN goes out even for no statement (what `transaction` deferred must happen).
        while start < statements.count || (first && !lead.isEmpty) {
            let end = min(start + max(chunkSize, 1), statements.count)
            // Statements whose results the caller does not see: BEGIN, the prologue.
            var hidden: [(Statement, String?)] = first ? Array(zip(lead, leadNames)) : []
            hidden += perChunk.map { ($0, nil) }
            first = false
            for (statement, name) in hidden { try send(statement, name: name) }
            for index in start..<end { try send(statements[index], name: names[index]) }
            guard PQpipelineSync(handle) == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
            var failure: DatabaseError? = nil
            for _ in hidden { _ = try readResult(failure: &failure) }
            for _ in start..<end {
                if let rows = try readResult(failure: &failure) { results.append(rows) }
            }
            // Then the sync point.
            while let result = PQgetResult(handle) {
                let isSync = PQresultStatus(result) == PGRES_PIPELINE_SYNC
                PQclear(result)
                if isSync { break }
            }
            if let failure { throw failure }
            if PQstatus(handle) != CONNECTION_OK { throw DatabaseError.from(result: nil, connection: handle) }
            start = end
        }
        return results
    }

    /// Queues one statement: prepared by `name`, or unnamed (parsed with its execution).
    private func send(_ statement: Statement, name: String?) throws(DatabaseError) {
        let params = statement.params
        let sent = withCStringArray(params) { pointers in
            if let name { return PQsendQueryPrepared(handle, name, Int32(params.count), pointers, nil, nil, 0) }
            return PQsendQueryParams(handle, statement.sql, Int32(params.count), nil, pointers, nil, nil, 0)
        }
        guard sent == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
    }

    /// Reads one queued statement's result: its rows, or nil after recording the first failure.
    private func readResult(failure: inout DatabaseError?) throws(DatabaseError) -> Rows? {
        guard let result = PQgetResult(handle) else { throw DatabaseError.from(result: nil, connection: handle) }
        var rows: Rows? = nil
        let status = PQresultStatus(result)
        if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
            rows = Rows(result: result)
        } else if failure == nil, status != PGRES_PIPELINE_ABORTED {
            failure = DatabaseError.from(result: result, connection: handle)
        }
        PQclear(result)
        // Each query's results end with a NULL.
        while let extra = PQgetResult(handle) { PQclear(extra) }
        return rows
    }
}
