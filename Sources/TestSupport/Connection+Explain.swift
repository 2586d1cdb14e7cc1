import EventStore

/// What the plan tests read: PostgreSQL's plan of a statement, as text.
extension Connection {
    /// `EXPLAIN (options) sql`, one line per row of the answer. No options: costs shown (and the
    /// JIT summary, which PostgreSQL prints only with them).
    public func explain(_ sql: String, _ params: [String?] = [], options: String = "") throws -> String {
        let rows = try query("EXPLAIN " + (options.isEmpty ? "" : "(\(options)) ") + sql, params)
        return (0..<rows.count).compactMap { rows[$0, 0] }.joined(separator: "\n")
    }

    /// The generic plan of `statement`, the one the plan cache may keep after five runs: prepared
    /// as `name` under `plan_cache_mode = force_generic_plan`, its parameters given as literals
    /// (EXECUTE takes no bound values; the plan does not depend on them).
    public func genericPlan(of statement: Statement, named name: String, options: String = "COSTS OFF") throws
        -> String
    {
        try executeScript("SET plan_cache_mode = force_generic_plan")
        try executeScript("PREPARE \(name) AS " + statement.sql)
        let arguments = statement.params.map {
            $0.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" } ?? "NULL"
        }
        let call = arguments.isEmpty ? name : "\(name)(\(arguments.joined(separator: ", ")))"
        return try explain("EXECUTE " + call, options: options)
    }
}
