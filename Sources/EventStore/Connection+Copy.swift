import CLibPQ

extension Connection {
    /// Runs `COPY … TO STDOUT` and returns everything the server sent (bulk export/replay).
    public func copyOut(_ sql: String) throws(DatabaseError) -> [UInt8] {
        var data: [UInt8] = []
        try copyOut(sql, appendingTo: &data)
        return data
    }

    /// `copyOut` into a buffer the caller reuses: a replay reads batch after batch of tens of
    /// megabytes, and a fresh array per batch costs its growth copies and page faults each time.
    public func copyOut(_ sql: String, appendingTo data: inout [UInt8]) throws(DatabaseError) {
        try copyOut(sql) { data.append(contentsOf: $0) }
    }

    /// `copyOut` handing each piece libpq received to `body` (valid only during the call), for
    /// a reader that keeps nothing whole.
    public func copyOut(_ sql: String, each body: (UnsafeRawBufferPointer) -> Void) throws(DatabaseError) {
        try startCopy(sql, expecting: PGRES_COPY_OUT)
        while true {
            var buffer: UnsafeMutablePointer<CChar>? = nil
            let length = PQgetCopyData(handle, &buffer, 0)
            if length > 0, let buffer {
                body(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                PQfreemem(buffer)
            } else if length == -1 {
                break
            } else {
                throw DatabaseError.from(result: nil, connection: handle)
            }
        }
        try finishCommand()
    }

    /// Runs `COPY … FROM STDIN` feeding it `data` (text or CSV format, as the SQL says).
    public func copyIn(_ sql: String, data: [UInt8]) throws(DatabaseError) {
        try startCopy(sql, expecting: PGRES_COPY_IN)
        let chunk = 64 * 1024
        var failed = false
        data.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset < bytes.count, !failed {
                let count = min(chunk, bytes.count - offset)
                let sent = UnsafeRawPointer(bytes.baseAddress! + offset)
                    .withMemoryRebound(to: CChar.self, capacity: count) { PQputCopyData(handle, $0, Int32(count)) }
                failed = sent != 1
                offset += count
            }
        }
        if failed || PQputCopyEnd(handle, nil) != 1 {
            throw DatabaseError.from(result: nil, connection: handle)
        }
        try finishCommand()
    }

    private func startCopy(_ sql: String, expecting expected: ExecStatusType) throws(DatabaseError) {
        // A deferred BEGIN, and in transaction pool mode the settings, go ahead in the same
        // simple query: PQexec stops at the COPY's result.
        guard let result = PQexec(handle, scriptPrologue() + sql) else {
            throw DatabaseError.from(result: nil, connection: handle)
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == expected else {
            let error = DatabaseError.from(result: result, connection: handle)
            if PQresultStatus(result) == PGRES_COPY_IN { _ = PQputCopyEnd(handle, "wrong COPY direction") }
            if PQresultStatus(result) == PGRES_COPY_OUT || PQresultStatus(result) == PGRES_COPY_IN {
                try? finishCommand()
            }
            throw error
        }
    }

    /// Reads the remaining results of the current command; throws the first failure.
    func finishCommand() throws(DatabaseError) {
        var failure: DatabaseError? = nil
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            if failure == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK {
                failure = DatabaseError.from(result: result, connection: handle)
            }
            PQclear(result)
            if PQstatus(handle) != CONNECTION_OK { break }
        }
        if let failure { throw failure }
    }
}
