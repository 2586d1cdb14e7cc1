/// How the server sessions behind our connections are shared.
public enum PoolMode: String, Sendable, CaseIterable {
    /// One server session per connection for its whole life (PostgreSQL directly, or PgBouncer
    /// `pool_mode = session`): session state is set once and kept.
    case session
    /// A pooler (PgBouncer `pool_mode = transaction`) lends a server session for one transaction
    /// only: the next transaction of the same connection may run on another session, so nothing
    /// may be left in the session (no named prepared statement, no `SET`, no session lock).
    case transaction
}

/// The role and settings every transaction of a connection must run with, and how they are
/// applied: once per connection in `.session` mode, as a prologue of every transaction in
/// `.transaction` mode (`set_config(…, true)`, the function form of `SET LOCAL`).
///
/// Values come from the program (role names, configured timeouts), never from a request; they
/// are bound as parameters where the protocol allows it and quoted as literals in scripts.
public struct SessionSettings: Sendable, Equatable {
    public struct Parameter: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public var poolMode: PoolMode
    /// `SET ROLE` target; nil stays the login role.
    public var role: String?
    /// Run-time parameters (`statement_timeout`, `synchronous_commit`, …), in order.
    public var parameters: [Parameter]

    public init(poolMode: PoolMode = .session, role: String? = nil, parameters: [Parameter] = []) {
        self.poolMode = poolMode
        self.role = role
        self.parameters = parameters
    }

    /// Nothing to set, session mode: what a plain `Connection(conninfo)` has always been.
    public static let direct = SessionSettings()

    /// No role or parameter: then there is no prologue either.
    public var isEmpty: Bool { role == nil && parameters.isEmpty }

    /// The same with one more parameter.
    public func setting(_ name: String, _ value: String) -> SessionSettings {
        var copy = self
        copy.parameters.append(Parameter(name, value))
        return copy
    }

    /// Role first: `set_config('role', …)` is `SET ROLE`, and the later settings are then the role's.
    var assignments: [Parameter] { (role.map { [Parameter("role", $0)] } ?? []) + parameters }

    /// One statement that applies every assignment, with bound parameters (for pipelines):
    /// `SELECT set_config($1, $2, true), set_config($3, $4, true)`.
    func statement(local: Bool) -> Connection.Statement {
        var calls: [String] = []
        var params: [String?] = []
        for (index, assignment) in assignments.enumerated() {
            calls.append("set_config($\(2 * index + 1), $\(2 * index + 2), \(local))")
            params += [assignment.name, assignment.value]
        }
        return Connection.Statement("SELECT " + calls.joined(separator: ", "), params)
    }

    /// The same as a simple-protocol statement (scripts, COPY), values quoted as literals.
    func script(local: Bool) -> String {
        "SELECT "
            + assignments.map { "set_config(\(Self.literal($0.name)), \(Self.literal($0.value)), \(local))" }
            .joined(separator: ", ")
    }

    /// A standard-conforming string literal (the server default since 9.1): quotes doubled.
    static func literal(_ text: String) -> String {
        var quoted = "'"
        for character in text {
            quoted.append(character)
            if character == "'" { quoted.append("'") }
        }
        return quoted + "'"
    }
}
