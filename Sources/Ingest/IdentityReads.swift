import EventStore
import Identity
import Infrastructure

/// What ingest planners need to know of identities before they decide (api.md §7): the users of
/// the registered ones among their batches' appAccountTokens (a claim by token), and whom their
/// Apple Accounts (`appTransactionId`) were seen with. Statements for the shell to send with
/// another round trip's, and their answer for every planner (each looks up only its own).
package struct IdentityReads {
    package let tokens: [String]
    package let appleAccounts: [String]
    /// Apple Accounts whose consent a notification withdraws: all their users are read.
    package let rescinded: [String]

    package init(_ planners: [IngestPlanner]) {
        tokens = Set(planners.flatMap(\.tokensToLookUp)).sorted()
        appleAccounts = Set(planners.flatMap(\.appTransactionIdsToLookUp)).sorted()
        rescinded = Set(planners.compactMap(\.rescindedAppleAccount)).sorted()
    }

    package struct Slots {
        package var tokens: PipelineBatch.Slot?
        package var appleAccounts: PipelineBatch.Slot?
        package var rescinded: PipelineBatch.Slot?
    }

    package struct Answer {
        package var registeredTokens: [String: String]
        package var appleAccountUsers: [String: Set<String>]
        package var rescindedUsers: [String: Set<String>]

        package func give(to planner: inout IngestPlanner) {
            planner.registeredTokens = registeredTokens
            planner.appleAccountUsers = appleAccountUsers
            planner.rescindedUsers = planner.rescindedAppleAccount.flatMap { rescindedUsers[$0] } ?? []
        }
    }

    /// Adds the reads that have something to ask (none: nothing added).
    package func add(to pipeline: inout PipelineBatch) -> Slots {
        Slots(
            tokens: pipeline.add(tokens.isEmpty ? nil : AppAccountTokensTable.owners(of: tokens).statement),
            appleAccounts: pipeline.add(
                appleAccounts.isEmpty ? nil : AppleAccountsTable.users(of: appleAccounts).statement),
            rescinded: pipeline.add(rescinded.isEmpty ? nil : AppleAccountsTable.allUsers(of: rescinded).statement))
    }

    package static func answer(_ results: PipelineBatch.Results, _ slots: Slots) -> Answer {
        Answer(
            registeredTokens: results[slots.tokens].map(AppAccountTokensTable.owners(from:)) ?? [:],
            appleAccountUsers: results[slots.appleAccounts].map(AppleAccountsTable.users(from:)) ?? [:],
            rescindedUsers: results[slots.rescinded].map(AppleAccountsTable.users(from:)) ?? [:])
    }
}
