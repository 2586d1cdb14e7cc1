import EventStore
import Foundation
import TestSupport
import Testing

@testable import Identity
@testable import Infrastructure

/// The replay's swap rebuilds three tables from events of rare types: the alias index, the
/// appAccountToken index and the Apple accounts. On a log of mostly other events each statement
/// reads only its own events through migration 0053's partial indexes, never the whole log (a
/// seq scan of es.events was ~430 ms of a 1M-event replay, most of it under the swap's locks).
/// The statements are the ones the swap runs: the Swift constants, and the function's body as
/// PostgreSQL stores it.
@Suite(.tags(.database)) struct ReplaySwapPlanTests {
    @Test func theSwapRebuildsReadOnlyTheirEventsThroughPartialIndexes() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        // 20,000 events of 2,000 users: 4,000 ChainClaimed, 10,000 TransactionRecorded (none with
        // an appTransactionId), renewal infos and debits; then two events of each rare kind.
        try ReplayBenchmarkLog.seed(events: 20_000, users: 2_000, conninfo: conninfo)
        let connection = try Connection(conninfo)
        // bench-5's and bench-7's subscription chains (3,000,000,000 + 2 × user) carry an Apple
        // Account; bench-8 and bench-9 are merged into bench-1; bench-2 and bench-3 register tokens.
        try connection.executeScript(
            """
            INSERT INTO es.events (stream_id, version, type, data) VALUES
            ('test:rare', 1, 'TransactionRecorded',
             '{"transactionId": "t5", "originalTransactionId": "3000000010", "appTransactionId": "A5"}'),
            ('test:rare', 2, 'TransactionRecorded',
             '{"transactionId": "t7", "originalTransactionId": "3000000014", "appTransactionId": "A7"}'),
            ('test:rare', 3, 'AliasMerged', '{"alias": "bench-8", "userId": "bench-1"}'),
            ('test:rare', 4, 'AliasMerged', '{"alias": "bench-9", "userId": "bench-1"}'),
            ('test:rare', 5, 'AppAccountTokenRegistered',
             '{"appAccountToken": "tok-2", "userId": "bench-2", "minted": false}'),
            ('test:rare', 6, 'AppAccountTokenRegistered',
             '{"appAccountToken": "tok-3", "userId": "bench-3", "minted": true}');
            ANALYZE es.events;
            """)
        let function = try connection.query(
            "SELECT prosrc FROM pg_proc WHERE proname = 'rebuild_apple_accounts'")[0, 0]
        let rebuilds: [(what: String, sql: String, indexes: [String])] = [
            ("alias index", UserAliasesTable.rebuild, ["events_alias_merged_idx"]),
            ("token index", AppAccountTokensTable.rebuild, ["events_app_account_token_registered_idx"]),
            ("Apple accounts", function ?? "", ["events_app_transaction_id_idx", "events_chain_claimed_idx"]),
        ]
        for rebuild in rebuilds {
            // Only the statements that read the log (the others empty or fill a projection).
            let statements = rebuild.sql.split(separator: ";").map(String.init).filter { $0.contains("es.events") }
            #expect(!statements.isEmpty, "\(rebuild.what): no statement reads es.events")
            var plans = ""
            for statement in statements {
                let text = try connection.explain(statement, options: "COSTS OFF")
                #expect(!text.contains("Seq Scan on events"), "\(rebuild.what): \(text)")
                plans += text + "\n"
            }
            for index in rebuild.indexes {
                #expect(plans.contains(index), "\(rebuild.what) does not use \(index): \(plans)")
            }
        }

        // The rebuilds on those plans find the six events, and only them.
        try connection.executeScript(
            UserAliasesTable.rebuild + "\n" + AppAccountTokensTable.rebuild + "\n" + AppleAccountsTable.rebuild)
        #expect(
            try rows("SELECT alias || '>' || user_id FROM proj.user_aliases ORDER BY 1", on: connection)
                == ["bench-8>bench-1", "bench-9>bench-1"])
        #expect(
            try rows(
                "SELECT app_account_token || '>' || user_id || '>' || minted FROM proj.app_account_tokens ORDER BY 1",
                on: connection) == ["tok-2>bench-2>false", "tok-3>bench-3>true"])
        #expect(
            try rows("SELECT app_transaction_id || '>' || user_id FROM proj.apple_accounts ORDER BY 1", on: connection)
                == ["A5>bench-5", "A7>bench-7"])
    }

    private func rows(_ sql: String, on connection: Connection) throws -> [String?] {
        let result = try connection.query(sql)
        return (0..<result.count).map { result[$0, 0] }
    }
}
