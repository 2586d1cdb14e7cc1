import EventStore
import Ledger

extension LedgerService {
    /// What `POST /v1/users/{userId}/app-account-token` answered.
    struct AppAccountTokenOutcome {
        /// The user it is: the named one, or the user it is an alias of (api.md §7).
        var userId: String
        var appAccountToken: String
        /// false: the token was the user's already; nothing was appended.
        var recorded: Bool
    }

    /// Mints the user's token (`register` nil) or registers `register` (lowercased) for them,
    /// as an AppAccountTokenRegistered event on the user's stream and a row of
    /// `proj.app_account_tokens`, in one transaction. Under the user's lock (and the token's,
    /// for a registration), so a repeat or a race with another user is decided on what the
    /// previous holder committed.
    func appAccountToken(userId named: String, register: String?, context: RequestContext) throws(ServiceError)
        -> AppAccountTokenOutcome
    {
        let now = clock()
        let (outcome, changes) = try unitOfWork {
            connection throws(ServiceError) -> (AppAccountTokenOutcome, [NewChange]) in
            let userId = try lockResolvingAlias(
                named, with: register.map { [AppAccountTokensTable.lockName($0)] } ?? [], on: connection)
            let world = try repository.loadUser(userId, on: connection)
            let command: AccountCommand
            let token: String
            if let register {
                let rows = try database { () throws(DatabaseError) in
                    try connection.query(AppAccountTokensTable.owner(of: register))
                }
                token = register
                command = .registerAppAccountToken(
                    userId: userId, appAccountToken: register, owner: rows.isEmpty ? nil : rows[0, 0], at: now)
            } else {
                token = world.account.mintedAppAccountToken ?? AppAccountToken.random()
                command = .mintAppAccountToken(userId: userId, candidate: token, at: now)
            }
            let events: [LedgerEvent]
            do throws(Rejection) {
                events = try Account.decide(command, world.account)
            } catch {
                throw .rejected(error)
            }
            guard case .appAccountTokenRegistered(_, _, let minted, _)? = events.first else {
                return (AppAccountTokenOutcome(userId: userId, appAccountToken: token, recorded: false), [])
            }
            let stored = try appendAnnouncing(
                events, world: world, documents: self.documents, now: now, context: context, on: connection)
            // After the append: es.append must be its transaction's first write.
            _ = try database { () throws(DatabaseError) in
                try connection.execute(AppAccountTokensTable.insert(token: token, userId: userId, minted: minted))
            }
            return (AppAccountTokenOutcome(userId: userId, appAccountToken: token, recorded: true), stored.changes)
        }
        changeTally.count(changes)
        return outcome
    }
}
