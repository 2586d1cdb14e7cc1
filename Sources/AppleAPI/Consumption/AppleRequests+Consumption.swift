import AppStore
import EventStore
import Infrastructure
import Ledger

extension AppleRequests {
    /// What answering one CONSUMPTION_REQUEST came to (the responder's metrics and logs).
    package struct ConsumptionAttemptReport: Sendable, Equatable {
        package var bundleId: String?
        /// nil: nothing was sent (see `settlement.lastError`).
        package var outcome: AppleRequestOutcome?
        package var settlement: ConsumptionSettlement
    }

    /// Answers one pending CONSUMPTION_REQUEST (docs/api.md §5): reads what the ledger knows of
    /// the transaction now, lets `ConsumptionPlanner` decide, sends Send Consumption Information
    /// when it says so, then records the attempt (a `ConsumptionAnswered` event on the chain's
    /// stream, under the chain's lock) and where it leaves the request, in one transaction.
    /// nil when the request is no longer pending (another instance settled it meanwhile).
    package func answerConsumptionRequest(
        _ request: ConsumptionRequestsTable.Row, context: RequestContext
    ) throws(ServiceError) -> ConsumptionAttemptReport? {
        // Before Apple is asked: the attempt could not be recorded (rolling upgrade in progress).
        try ledger.projectionVersions.requireCurrent()
        let now = ledger.clock()
        let (app, info) = try consumptionFacts(request, at: now)
        let decision = ConsumptionPlanner.decide(request, settings: app?.consumption, info: info, now: now)
        var outcome: AppleRequestOutcome?
        let settlement: ConsumptionSettlement
        var answer: ConsumptionAnswer?
        switch decision {
        case .finish(let final):
            settlement = final
        case .send(let fields, let attempt):
            // `decide` sends only with a consumption config, which the loader allows only with a key.
            let client = app!.serverAPI!.client(bundleId: app!.bundleId)
            let (sent, error, code) = Self.send(fields, request, client)
            outcome = sent
            let done = ledger.clock()
            settlement = ConsumptionPlanner.settle(request, attempt: attempt, outcome: sent, error: error, now: done)
            answer = ConsumptionAnswer(
                notificationUUID: request.notificationUUID, transactionId: request.transactionId,
                originalTransactionId: request.originalTransactionId, environment: request.environment,
                customerConsented: fields.customerConsented, sampleContentProvided: fields.sampleContentProvided,
                deliveryStatus: fields.deliveryStatus, consumptionPercentage: fields.consumptionPercentage,
                refundPreference: fields.refundPreference, outcome: sent, appleErrorCode: code, detail: error,
                attempt: Int64(attempt), at: done)
        }
        let stored = try ledger.unitOfWork { connection throws(ServiceError) -> Bool in
            try database { () throws(DatabaseError) in
                try ledger.repository.lock([LedgerStream.chain(request.originalTransactionId)], on: connection)
            }
            let owner = try lockOwner(ofChain: request.originalTransactionId, on: connection)
            let current = ConsumptionRequestsTable.decode(
                try database { () throws(DatabaseError) in
                    try connection.query(ConsumptionRequestsTable.find(request.notificationUUID))
                })
            guard let row = current.first, row.state == .pending, row.attempts == request.attempts else { return false }
            if let answer {
                _ = try ledger.repository.append(
                    [(.consumptionAnswered(answer), nil)], metadata: context.metadata, expected: [:],
                    idempotencyKey: nil,
                    on: connection)
                try restoreOwnerDocument(owner, after: .consumptionAnswered(answer), now: answer.at, on: connection)
            }
            _ = try database { () throws(DatabaseError) in
                try connection.execute(
                    ConsumptionRequestsTable.settle(request.notificationUUID, settlement, now: ledger.clock()))
            }
            return true
        }
        guard stored else { return nil }
        return ConsumptionAttemptReport(bundleId: app?.bundleId, outcome: outcome, settlement: settlement)
    }

    /// The app the transaction belongs to and the ledger's consumption information for it now:
    /// the owner's account and chains when the chain is claimed, else the chain alone.
    private func consumptionFacts(
        _ request: ConsumptionRequestsTable.Row, at now: Int64
    ) throws(ServiceError) -> (Configuration.App?, ConsumptionInfo?) {
        try ledger.read { connection throws(ServiceError) in
            let chain = request.originalTransactionId
            let owners = try database { () throws(DatabaseError) -> Rows in
                let statement = ChainOwnersTable.owners(of: [chain])!
                return try connection.query(statement.sql, statement.params)
            }
            let account: Account
            var chains: [String: ChainState]
            if let owner = ChainOwnersTable.owners(from: owners)[chain] {
                let world = try ledger.repository.loadUser(owner, on: connection)
                (account, chains) = (world.account, world.chains)
            } else {
                let loaded = try ledger.repository.load(streams: [LedgerStream.chain(chain)], on: connection)
                (account, chains) = (.initial, [chain: Chain.fold(loaded.values.flatMap(\.events))])
            }
            if chains[chain] == nil {
                // Claimed, but the owner's fold does not hold it (it moved meanwhile): the chain alone.
                let loaded = try ledger.repository.load(streams: [LedgerStream.chain(chain)], on: connection)
                chains[chain] = Chain.fold(loaded.values.flatMap(\.events))
            }
            let bundleId = chains[chain]?.latest(transactionId: request.transactionId)?.bundleId
            let app = ledger.configuration.apps.first { $0.bundleId == bundleId }
            let info = ConsumptionInfo.compute(
                transactionId: request.transactionId, account: account, chains: chains,
                catalog: ledger.documents.catalog,
                at: now)
            return (app, info)
        }
    }

    /// Sends the answer; the outcome, a line for a person when it did not go through, and Apple's errorCode.
    private static func send(
        _ fields: ConsumptionPlanner.ConsumptionInformationFields, _ request: ConsumptionRequestsTable.Row,
        _ client: AppStoreServerClient
    ) -> (AppleRequestOutcome, String?, Int64?) {
        let information = ConsumptionInformation(
            customerConsented: fields.customerConsented, sampleContentProvided: fields.sampleContentProvided,
            deliveryStatus: fields.deliveryStatus, consumptionPercentage: fields.consumptionPercentage,
            refundPreference: fields.refundPreference)
        do {
            try client.sendConsumptionInformation(
                request.transactionId, information,
                environment: request.environment.flatMap(AppStoreServerEnvironment.init(rawValue:)))
            return (.accepted, nil, nil)
        } catch {
            switch error {
            case .rejected(401, _, _):
                // The token was refused: the key's ids are wrong. Fixing the config and restarting
                // within the window still answers, so it is tried again.
                return (.unavailable, "Apple refused the token (401): check serverAPI issuerId and keyId", nil)
            case .rejected(_, let code, _):
                return (.rejected, error.description, code)
            case .unavailable, .malformedResponse:
                return (.unavailable, error.description, nil)
            case .invalidArgument:
                return (.rejected, error.description, nil)
            }
        }
    }
}
