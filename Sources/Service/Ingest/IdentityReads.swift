import EventStore
import Infrastructure

/// What ingest planners need to know of identities before they decide (api.md §7): the users of
/// the registered ones among their batches' appAccountTokens (a claim by token), and whom their
/// Apple Accounts (`appTransactionId`) were seen with. Statements for the shell to send with
/// another round trip's, and their answer for every planner (each looks up only its own).
struct IdentityReads {
    let tokens: [String]
    let appleAccounts: [String]
    /// Apple Accounts whose consent a notification withdraws: all their users are read.
    let rescinded: [String]

    init(_ planners: [IngestPlanner]) {
        tokens = Set(planners.flatMap(\.tokensToLookUp)).sorted()
        appleAccounts = Set(planners.flatMap(\.appTransactionIdsToLookUp)).sorted()
        rescinded = Set(planners.compactMap(\.rescindedAppleAccount)).sorted()
    }

    struct Slots {
        var tokens: PipelineBatch.Slot?
        var appleAccounts: PipelineBatch.Slot?
        var rescinded: PipelineBatch.Slot?
    }

    struct Answer {
        var registeredTokens: [String: String]
        var appleAccountUsers: [String: Set<String>]
        var rescindedUsers: [String: Set<String>]

        func give(to planner: inout IngestPlanner) {
            planner.registeredTokens = registeredTokens
            planner.appleAccountUsers = appleAccountUsers
            planner.rescindedUsers = planner.rescindedAppleAccount.flatMap { rescindedUsers[$0] } ?? []
        }
    }

    /// Adds the reads that have something to ask (none: nothing added).
    func add(to pipeline: inout PipelineBatch) -> Slots {
        Slots(
            tokens: pipeline.add(tokens.isEmpty ? nil : AppAccountTokensTable.owners(of: tokens).statement),
            appleAccounts: pipeline.add(
                appleAccounts.isEmpty ? nil : AppleAccountsTable.users(of: appleAccounts).statement),
            rescinded: pipeline.add(rescinded.isEmpty ? nil : AppleAccountsTable.allUsers(of: rescinded).statement))
    }

    static func answer(_ results: PipelineBatch.Results, _ slots: Slots) -> Answer {
        Answer(
            registeredTokens: results[slots.tokens].map(AppAccountTokensTable.owners(from:)) ?? [:],
            appleAccountUsers: results[slots.appleAccounts].map(AppleAccountsTable.users(from:)) ?? [:],
            rescindedUsers: results[slots.rescinded].map(AppleAccountsTable.users(from:)) ?? [:])
    }
}
