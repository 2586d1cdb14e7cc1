/// SQL whose values are bound: built by string interpolation, each interpolated value becomes
/// the next `$n` parameter and is sent apart from the text, so a value can never change what
/// the statement does. Only the literal segments (source code) become SQL text.
///
///     let query: Query = "SELECT document FROM proj.users WHERE user_id = \(userId)"
///     // sql: "SELECT document FROM proj.users WHERE user_id = $1", params: [userId]
///
/// There is deliberately no interpolation for arbitrary values: a type that is not bound
/// here does not compile, rather than turning into text.
public struct Query: Sendable, Hashable, ExpressibleByStringInterpolation {
    public private(set) var sql: String
    public private(set) var params: [String?]

    public init(stringLiteral value: String) {
        sql = value
        params = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        params = stringInterpolation.params
    }

    /// The query as a statement for `Connection.pipeline` and friends.
    public var statement: Connection.Statement { Connection.Statement(sql, params) }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql = ""
        var params: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            params.reserveCapacity(interpolationCount)
        }

        /// Source text, kept as written (a `$` or `%` in it stays what it is).
        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// A text value (nil binds SQL NULL).
        public mutating func appendInterpolation(_ value: String?) { bind(value) }

        public mutating func appendInterpolation(_ value: String) { bind(value) }

        /// An integer, bound as its decimal text (nil binds SQL NULL).
        public mutating func appendInterpolation<Integer: BinaryInteger>(_ value: Integer?) {
            bind(value.map { String($0) })
        }

        public mutating func appendInterpolation<Integer: BinaryInteger>(_ value: Integer) { bind(String(value)) }

        /// Text values as one array parameter (cast it: `\(array: ids)::text[]`).
        public mutating func appendInterpolation(array values: [String?]) { bind(PostgresArray.literal(values)) }

        public mutating func appendInterpolation(array values: [String]) { bind(PostgresArray.literal(values)) }

        /// Integers as one array parameter (cast it: `\(array: versions)::bigint[]`).
        public mutating func appendInterpolation<Integer: BinaryInteger>(array values: [Integer?]) {
            bind(PostgresArray.literal(values.map { $0.map { String($0) } }))
        }

        public mutating func appendInterpolation<Integer: BinaryInteger>(array values: [Integer]) {
            bind(PostgresArray.literal(values.map { String($0) }))
        }

        /// SQL text fixed at compile time (a table name chosen from a closed set): a
        /// `StaticString` cannot come from input, so this is still no concatenation of values.
        public mutating func appendInterpolation(unescaped fragment: StaticString) {
            sql += fragment.description
        }

        private mutating func bind(_ value: String?) {
            params.append(value)
            sql += "$"
            sql += String(params.count)
        }
    }
}

extension Connection.Statement {
    /// The statement of a `Query` (its text and its bound values).
    public init(_ query: Query) {
        self.init(query.sql, query.params)
    }
}

extension Connection {
    /// Runs one `Query` (see `query(_:_:)`).
    public func query(_ query: Query) throws(DatabaseError) -> Rows {
        try self.query(query.sql, query.params)
    }

    /// Runs one `Query` that returns no rows; answers the number of affected rows.
    @discardableResult
    public func execute(_ query: Query) throws(DatabaseError) -> Int {
        try self.query(query.sql, query.params).affectedRows
    }
}
