import EventStore
import TestSupport
import Testing

@testable import Infrastructure

/// A page of the feed never reads the whole of `identity.subjects`, whatever plan the plan cache
/// keeps for it. In session mode every statement is prepared, and after five runs PostgreSQL may
/// keep a generic plan, made without the parameters: it guesses a page's LIMIT at a tenth of the
/// feed. For that many rows it hashed `identity.subjects` for the `known` column's EXISTS, and the
/// first row in a page that needed the probe (a row in clear, an erased person's) made the page
/// read every subject (26 ms per page at 100,000 users, more with more users).
@Suite(.tags(.database)) struct ChangeFeedPlanTests {
    @Test func aPageProbesSubjectsByIndexUnderItsGenericPlan() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let connection = try Connection(conninfo)
        // 5,000 legacy users (subject = id) and 2,000 changes of people who are no longer there:
        // each row's subject finds no identity row, so every row runs the `known` probe.
        try connection.executeScript(
            """
            INSERT INTO identity.subjects (user_id, subject) SELECT 'u' || i, 'u' || i FROM generate_series(1, 5000) i;
            INSERT INTO changes.feed (type, user_id, occurred_at, recorded_at, entitlement_ids, details, customer)
            SELECT 'balance_debit', 'gone-' || i, 1, 1, '{}', '{}', '{}' FROM generate_series(1, 2000) i;
            ANALYZE identity.subjects;
            ANALYZE changes.feed;
            """)
        // A page serves rows below the cluster-wide xid horizon only: another test's open
        // transaction can hold it behind these rows for a while.
        try ChangeFeedTests.settle(conninfo)
        let page = ChangeFeedTable.page(after: .start, limit: 100, userId: nil)
        let text = try connection.genericPlan(
            of: page.statement, named: "page", options: "ANALYZE, COSTS OFF, TIMING OFF")
        #expect(text.hasPrefix("Limit"), "\(text)")
        #expect(!text.contains("Seq Scan on subjects"), "\(text)")
        #expect(text.contains("Index Only Scan using subjects_pkey"), "\(text)")
        #expect(text.contains("rows=100 loops=1"), "the page read its 100 rows: \(text)")
    }
}
