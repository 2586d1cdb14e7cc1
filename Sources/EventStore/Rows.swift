import CLibPQ

/// The rows of one result, copied out of libpq (text format) so no C memory outlives the call.
public struct Rows: Sendable {
    /// Column names in result order.
    public let columns: [String]
    /// Number of rows.
    public let count: Int
    /// Rows affected by INSERT/UPDATE/DELETE (0 for other commands).
    public let affectedRows: Int
    private let values: [String?]  // row-major

    init(result: OpaquePointer) {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [String] = []
        columns.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            columns.append(String(cString: PQfname(result, Int32(column))))
        }
        var values: [String?] = []
        values.reserveCapacity(rowCount * columnCount)
        for row in 0..<rowCount {
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, Int32(row), Int32(column))))
                }
            }
        }
        self.columns = columns
        self.count = rowCount
        self.values = values
        self.affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    public var isEmpty: Bool { count == 0 }

    /// The text value at `row`, `column` (nil for SQL NULL).
    public subscript(row: Int, column: Int) -> String? {
        precondition(row >= 0 && row < count && column >= 0 && column < columns.count, "row/column out of range")
        return values[row * columns.count + column]
    }

    /// The text value at `row` in the column named `column` (nil for SQL NULL).
    public subscript(row: Int, column: String) -> String? {
        self[row, index(of: column)]
    }

    /// The integer at `row`, `column` (nil for SQL NULL); traps if the column is not an integer.
    public func int64(_ row: Int, _ column: String) -> Int64? {
        guard let text = self[row, column] else { return nil }
        guard let value = Int64(text) else { preconditionFailure("column \(column) is not an integer: \(text)") }
        return value
    }

    /// The boolean at `row`, `column` (PostgreSQL text `t`/`f`; nil for SQL NULL).
    public func bool(_ row: Int, _ column: String) -> Bool? {
        self[row, column].map { $0 == "t" }
    }

    private func index(of column: String) -> Int {
        guard let index = columns.firstIndex(of: column) else {
            preconditionFailure("no column \(column) in result (\(columns))")
        }
        return index
    }
}
