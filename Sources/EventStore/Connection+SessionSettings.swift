import CLibPQ

/// How `session` reaches the server in transaction pool mode: no statement of ours may rely on
/// a previous one having run on the same server session, so the settings travel with each
/// transaction, in the round trip that opens it.
///
/// `set_config(name, value, true)` is `SET LOCAL`: in force until the transaction ends, in an
/// explicit one (after BEGIN) as in the implicit one PostgreSQL runs until a pipeline's Sync or
/// around a multi-statement simple query (PgBouncerTransactionModeTests checks that the role
/// holds there). PgBouncer hands the server session back only at the end of a transaction.
extension Connection {
    /// Sent right after a deferred BEGIN (empty in session mode: the settings were applied at connect).
    var transactionPrologue: [Statement] {
        session.poolMode == .transaction && !session.isEmpty ? [session.statement(local: true)] : []
    }

    /// Sent ahead of a statement that runs outside any transaction (its own implicit one).
    var autocommitPrologue: [Statement] {
        // Session mode first: its statements must cost what they always did.
        guard session.poolMode == .transaction, !session.isEmpty, !beginPending,
            PQtransactionStatus(handle) == PQTRANS_IDLE
        else { return [] }
        return [session.statement(local: true)]
    }

    /// What a simple-protocol script (or COPY) must start with: the deferred BEGIN, if any, and
    /// in transaction mode the settings, unless a transaction with them is already open.
    /// Clears `beginPending`: the caller sends it now.
    func scriptPrologue() -> String {
        let local = session.poolMode == .transaction && !session.isEmpty
        if beginPending {
            beginPending = false
            return local ? "BEGIN;\n" + session.script(local: true) + ";\n" : "BEGIN;\n"
        }
        guard local, PQtransactionStatus(handle) == PQTRANS_IDLE else { return "" }
        return session.script(local: true) + ";\n"
    }
}
