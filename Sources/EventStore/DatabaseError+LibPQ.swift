import CLibPQ

// The one place where libpq's error reporting becomes a typed `DatabaseError`.
extension DatabaseError {
    /// Builds the error for a failed command. `result` may be nil (libpq could not even
    /// allocate a result, e.g. the connection is gone).
    static func from(result: OpaquePointer?, connection: OpaquePointer) -> DatabaseError {
        let connectionBad = PQstatus(connection) != CONNECTION_OK
        if let result {
            let state = field(result, CLibPQ_DiagSQLState())
            let primary = field(result, CLibPQ_DiagMessagePrimary())
            let message = primary ?? trimmed(PQresultErrorMessage(result))
            if let state, !connectionBad || state.hasPrefix("08") || state.hasPrefix("57P") {
                return DatabaseError(
                    sqlState: state, message: message.isEmpty ? "unknown error" : message,
                    detail: field(result, CLibPQ_DiagMessageDetail()),
                    constraint: field(result, CLibPQ_DiagConstraintName()))
            }
            if connectionBad {
                return .connectionFailure(message.isEmpty ? trimmed(PQerrorMessage(connection)) : message)
            }
            if let state { return DatabaseError(sqlState: state, message: message) }
            return DatabaseError(sqlState: "XX000", message: message.isEmpty ? connectionMessage(connection) : message)
        }
        if connectionBad { return .connectionFailure(connectionMessage(connection)) }
        return DatabaseError(sqlState: "XX000", message: connectionMessage(connection))
    }

    /// libpq's current message for the connection (client-side failures, connect errors).
    static func connectionMessage(_ connection: OpaquePointer) -> String {
        let text = trimmed(PQerrorMessage(connection))
        return text.isEmpty ? "unknown libpq error" : text
    }

    private static func field(_ result: OpaquePointer, _ code: Int32) -> String? {
        guard let pointer = PQresultErrorField(result, code) else { return nil }
        return String(cString: pointer)
    }

    private static func trimmed(_ pointer: UnsafeMutablePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        var text = String(cString: pointer)
        while let last = text.last, last.isWhitespace { text.removeLast() }
        // libpq prefixes multi-line messages; keep them on one line for logs.
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingPrefix("ERROR:  ") }
            .joined(separator: " ")
    }
}
