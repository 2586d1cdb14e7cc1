import EventStore
import TestSupport
import Testing

@Suite(.tags(.database)) struct QueryTests {
    @Test func interpolatedValuesBecomeNumberedParametersInOrder() {
        let user = "u-1'; DROP TABLE proj.users; --"
        let validUntil: Int64? = nil
        let query: Query = """
            INSERT INTO t (a, b, c, d) VALUES (\(user), \(Int64(42)), \(validUntil), \(array: ["x", "y\""]))
            """
        #expect(query.sql == "INSERT INTO t (a, b, c, d) VALUES ($1, $2, $3, $4)")
        #expect(query.params == [user, "42", nil, #"{"x","y\""}"#])
    }

    @Test func literalDollarAndPercentSignsStayInTheSQL() {
        let pattern = "ab%"
        let query: Query = "SELECT '$1 costs 5%' AS note, $$x$$ AS raw WHERE name LIKE \(pattern) AND id = \(7)"
        #expect(query.sql == "SELECT '$1 costs 5%' AS note, $$x$$ AS raw WHERE name LIKE $1 AND id = $2")
        #expect(query.params == ["ab%", "7"])
        let plain: Query = "SELECT 1"
        #expect(plain.sql == "SELECT 1" && plain.params.isEmpty)
    }

    @Test func onlyStaticTextIsSplicedUnescaped() {
        let query: Query = "DELETE FROM \(unescaped: "proj.users_next") WHERE user_id = ANY(\(array: ["a"])::text[])"
        #expect(query.sql == "DELETE FROM proj.users_next WHERE user_id = ANY($1::text[])")
        #expect(Connection.Statement(query).params == [#"{"a"}"#])
    }

    /// The server sees the values as values: quotes and SQL in them come back unchanged.
    @Test func boundValuesRoundTripThroughPostgreSQL() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let text = "it's $1 \"quoted\"; SELECT 1"
        let none: String? = nil
        let query: Query = """
            SELECT \(text)::text AS a, \(Int64(41))::int8 + 1 AS b, \(none)::text AS c, '$%' AS d,
                cardinality(\(array: [Int64(1), 2, 3])::bigint[]) AS e
            """
        let rows = try connection.query(query)
        #expect(rows[0, "a"] == text)
        #expect(rows.int64(0, "b") == 42)
        #expect(rows[0, "c"] == nil)
        #expect(rows[0, "d"] == "$%")
        #expect(rows.int64(0, "e") == 3)
    }
}
