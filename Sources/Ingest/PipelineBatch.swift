import EventStore
import Infrastructure

/// Statements to send in one round trip, each optional one given a slot, so that its rows
/// are found by what it asked rather than by counting which statements were sent.
package struct PipelineBatch {
    /// Where a statement's rows will be.
    package struct Slot {
        fileprivate let index: Int
    }

    /// The rows of a batch's statements, by slot.
    package struct Results {
        fileprivate let rows: [Rows]

        /// The rows of the statement at `slot`; nil when that statement was not sent.
        package subscript(slot: Slot?) -> Rows? { slot.map { rows[$0.index] } }
    }

    package private(set) var statements: [Connection.Statement] = []

    /// Adds `statement` (nothing for nil) and says where its rows will be.
    @discardableResult
    package mutating func add(_ statement: Connection.Statement?) -> Slot? {
        guard let statement else { return nil }
        statements.append(statement)
        return Slot(index: statements.count - 1)
    }

    /// Sends the statements in one round trip (with a deferred BEGIN, if any).
    package func run(on connection: Connection) throws(DatabaseError) -> Results {
        Results(rows: try connection.pipeline(statements))
    }

    /// Sends the statements and COMMIT in one round trip, ending the transaction.
    package func commit(on connection: Connection) throws(DatabaseError) -> Results {
        Results(rows: try connection.commit(after: statements))
    }
}
