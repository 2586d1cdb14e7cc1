import AppStore
import Infrastructure
import Ingest
import JSON
import Ledger

extension AppleRequests {
    /// What one reconciliation found and did (`POST /v1/admin/reconcile`'s answer).
    package struct ReconcileReport: Sendable {
        /// Notifications Apple's history listed.
        package var fetched = 0
        /// Of those, recorded now: they had never reached this service.
        package var recorded = 0
        /// Already recorded (delivered by Apple, or by an earlier reconciliation).
        package var duplicates = 0
        /// Did not verify: never recorded.
        package var rejected = 0

        /// `{"fetched", "recorded", "duplicates", "rejected"}` and `extra` (the API's and the CLI's answer).
        package func json(_ extra: [(String, String)] = []) -> [UInt8] {
            var w = JSONWriter(capacity: 160)
            w.beginObject()
            w.key("fetched")
            w.int(Int64(fetched))
            w.key("recorded")
            w.int(Int64(recorded))
            w.key("duplicates")
            w.int(Int64(duplicates))
            w.key("rejected")
            w.int(Int64(rejected))
            for (name, value) in extra {
                w.key(name)
                w.string(value)
            }
            w.endObject()
            return w.bytes
        }
    }

    /// Asks Apple's Get Notification History, per app with a `serverAPI` key and per store
    /// environment the app accepts, for the notifications sent between `since` and `until`
    /// (every page), and records each one exactly as `POST /v1/notifications/apple` would: verified
    /// first, a redelivery a duplicate (api.md §5, missed notifications). `bundleId` and
    /// `environment` narrow it down.
    package func reconcile(
        since: Int64, until: Int64, bundleId: String? = nil, environment: String? = nil, context: RequestContext
    ) throws(ServiceError) -> ReconcileReport {
        let apps = ledger.configuration.apps.filter {
            $0.serverAPI != nil && (bundleId == nil || $0.bundleId == bundleId)
        }
        guard !apps.isEmpty else {
            throw .serverAPINotConfigured(
                bundleId.map { "app \($0) has no serverAPI key" }
                    ?? "no app has a serverAPI key: reconcile asks Apple's App Store Server API")
        }
        var report = ReconcileReport()
        for app in apps {
            let client = app.serverAPI!.client(bundleId: app.bundleId)
            for store in AppStoreServerEnvironment.allCases
            where app.environments.contains(store.rawValue) && (environment == nil || environment == store.rawValue) {
                let query = NotificationHistoryQuery(startDate: since, endDate: until)
                var token: String?
                repeat {
                    let page: NotificationHistoryPage
                    do {
                        page = try client.notificationHistory(query, paginationToken: token, environment: store)
                    } catch {
                        throw .appStoreServer(error)
                    }
                    for item in page.items {
                        report.fetched += 1
                        let batch: FactBatch
                        do {
                            batch = try ingestion.verifyNotification(item.signedPayload)
                        } catch {
                            report.rejected += 1
                            ledger.logger.warning(
                                "reconcile: a notification from Apple's history did not verify",
                                [
                                    "bundleId": app.bundleId, "environment": store.rawValue, "error": "\(error)",
                                ])
                            continue
                        }
                        let outcome = try ingestion.record(batch, claimant: nil, context: context)
                        if outcome.notificationRecorded { report.recorded += 1 } else { report.duplicates += 1 }
                    }
                    token = page.hasMore ? page.paginationToken : nil
                } while token != nil
            }
        }
        return report
    }
}
