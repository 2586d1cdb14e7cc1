import EventStore
import TestSupport
import Testing

@testable import Infrastructure

/// The service's sessions never compile a statement with JIT nor start parallel workers for it,
/// whatever its plan's guessed cost. On a log no ANALYZE had seen, the read of a batch's streams
/// was guessed above `jit_above_cost`: every read compiled its expressions and started two
/// workers, 50–65 ms for ten rows (ServiceRole). Here the thresholds are set to zero, so any plan
/// qualifies for both; a plain session is the control that shows it would.
@Suite(.tags(.database)) struct ServiceSessionPlanTests {
    static let eager = """
        SET jit_above_cost = 0; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
        SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
        """

    static func plan(_ connection: Connection) throws -> String {
        try connection.explain("SELECT count(*) FROM es.events WHERE type <> ''")
    }

    @Test func theServicesSessionsNeitherCompileNorParallelize() throws {
        let database = try TestDatabase.shared.freshDatabase()
        let plain = try Connection(database)
        try plain.executeScript(Self.eager)
        let control = try Self.plan(plain)
        #expect(control.contains("JIT:"), "the control compiles:\n\(control)")
        #expect(control.contains("Gather"), "the control runs workers:\n\(control)")

        let service = try Connection(database, session: ServiceRole.session(.session))
        // Only the thresholds: the session's own jit and workers settings stay as it set them.
        try service.executeScript(
            "SET jit_above_cost = 0; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                + "SET min_parallel_table_scan_size = 0")
        let plan = try Self.plan(service)
        #expect(!plan.contains("JIT:"), "\(plan)")
        #expect(!plan.contains("Gather"), "\(plan)")

        let fold = try Connection(database, session: ServiceRole.sessionWithoutTimeout(.session))
        try fold.executeScript("SET jit_above_cost = 0")
        #expect(!(try Self.plan(fold)).contains("JIT:"))
    }
}
