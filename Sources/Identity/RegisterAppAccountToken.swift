import EventStore
import Infrastructure
import Ledger

/// `POST /v1/users/{userId}/app-account-token` (api.md §7): mints the user's token (`register`
/// nil; the one minted before is answered again) or registers `register` (lowercased) for them,
/// as an AppAccountTokenRegistered event on the user's stream and a row of
/// `proj.app_account_tokens`, in one transaction. Under the user's lock and the token's, so a
/// repeat or a race with another user is decided on what the previous holder committed.
package struct RegisterAppAccountToken: AccountUseCase {
    package struct Outcome {
        /// The user it is: the named one, or the user it is an alias of (api.md §7).
        package var userId: String
        package var appAccountToken: String
        /// false: the token was the user's already; nothing was appended.
        package var recorded: Bool
    }

    package var userId: String
    package var register: String?

    package init(userId: String, register: String?) {
        self.userId = userId
        self.register = register
    }
    /// The token minted when the user has none (made by the caller: the decision stays pure).
    package var candidate = AppAccountToken.random()

    package var locks: [String] { register.map { [AppAccountTokensTable.lockName($0)] } ?? [] }

    /// Who holds the token to register already, if anyone.
    package func read(userId: String, on connection: Connection) throws(ServiceError) -> String? {
        guard let register else { return nil }
        let rows = try database { () throws(DatabaseError) in
            try connection.query(AppAccountTokensTable.owner(of: register))
        }
        return rows.isEmpty ? nil : rows[0, 0]
    }

    package func decide(_ world: LedgerRepository.UserWorld, facts owner: String?, input: AccountDecisionInput)
        throws(ServiceError) -> AccountDecision<Outcome>
    {
        let token: String
        let command: AccountCommand
        if let register {
            token = register
            command = .registerAppAccountToken(
                userId: input.userId, appAccountToken: register, owner: owner, at: input.now)
        } else {
            token = world.account.mintedAppAccountToken ?? candidate
            command = .mintAppAccountToken(userId: input.userId, candidate: token, at: input.now)
        }
        let events = try decided { () throws(Rejection) in try Account.decide(command, world.account) }
        guard case .appAccountTokenRegistered(_, _, let minted, _)? = events.first else {
            return .answer(Outcome(userId: input.userId, appAccountToken: token, recorded: false))
        }
        return .append(
            events, writes: [AppAccountTokensTable.insert(token: token, userId: input.userId, minted: minted)]
        ) { _ in Outcome(userId: input.userId, appAccountToken: token, recorded: true) }
    }
}
