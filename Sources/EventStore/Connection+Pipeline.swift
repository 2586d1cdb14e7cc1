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
    /// Inside `transaction` before its first statement, the deferred BEGIN goes out first, in
    /// the same round trip.
    public func pipeline(_ statements: [Statement], chunkSize: Int = 256) throws(DatabaseError) -> [Rows] {
        let withBegin = beginPending
        let statements = withBegin ? [Statement("BEGIN")] + statements : statements
        var names: [String] = []
        names.reserveCapacity(statements.count)
        for statement in statements { names.append(try preparedName(for: statement.sql)) }
        // From here on BEGIN is as good as sent: on any failure the caller rolls back.
        beginPending = false
        guard PQenterPipelineMode(handle) == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
        defer { if PQexitPipelineMode(handle) != 1 { isPoisoned = true } }
        var results: [Rows] = []
        results.reserveCapacity(statements.count)
        var start = 0
        while start < statements.count {
            let end = min(start + max(chunkSize, 1), statements.count)
            for index in start..<end {
                let params = statements[index].params
                let sent = withCStringArray(params) { pointers in
                    PQsendQueryPrepared(handle, names[index], Int32(params.count), pointers, nil, nil, 0)
                }
                guard sent == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
            }
            guard PQpipelineSync(handle) == 1 else { throw DatabaseError.from(result: nil, connection: handle) }
            var failure: DatabaseError? = nil
            for _ in start..<end {
                guard let result = PQgetResult(handle) else {
                    throw DatabaseError.from(result: nil, connection: handle)
                }
                let status = PQresultStatus(result)
                if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                    results.append(Rows(result: result))
                } else if failure == nil, status != PGRES_PIPELINE_ABORTED {
                    failure = DatabaseError.from(result: result, connection: handle)
                }
                PQclear(result)
                // Each query's results end with a NULL.
                while let extra = PQgetResult(handle) { PQclear(extra) }
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
        if withBegin { results.removeFirst() }
        return results
    }
}
