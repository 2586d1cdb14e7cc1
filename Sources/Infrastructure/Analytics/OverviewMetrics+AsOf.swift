import EventStore

/// The overview's `asOf` (api.md §3.1: "shows them as they were reported then — the rates and
/// events recorded up to that instant"): with it, every series reads the facts as the ledger had
/// recorded them at `asOf` instead of the analytics tables as they stand, so a refund, renewal or
/// purchase recorded later changes nothing it answers, and a subscription's status (churn) is
/// judged at `asOf` rather than now — the very answer the overview gave at that instant.
///
/// The facts as of an instant come from the projection's versions (migration 0043):
/// `analytics.transactions_as_of`, `analytics.renewal_infos_as_of` and
/// `analytics.revenue_movements_as_of`. Without `asOf` the statement reads the tables and views
/// themselves, as it did.
extension OverviewMetrics {
    /// What the overview's statement reads, named as FROM items. Fixed SQL text (no value of the
    /// request enters it: the instant is `bounds.as_of`, a bound parameter).
    package struct Sources: Sendable {
        /// Common table expressions placed after `bounds` (each ending with a comma), or nothing.
        package var ctes: StaticString
        package var transactions: StaticString
        package var renewalInfos: StaticString
        package var movements: StaticString
        package var lifecycles: StaticString
        package var subscriptions: StaticString

        /// Everything recorded: the projection as it stands. The subscriptions view is read once
        /// (materialized) rather than once per bucket: its statuses are judged at now(), one
        /// instant for the whole statement, so the answer is the same, in half the time (16 s →
        /// 8 s for 60,000 transactions by day over 30 days; docs/analytics.md).
        package static let current = Sources(
            ctes: """
                current_subscriptions AS MATERIALIZED (
                    SELECT s.original_transaction_id, s.status, s.expires_date, s.environment FROM analytics.subscriptions s
                ),
                """,
            transactions: "analytics.transactions", renewalInfos: "analytics.renewal_infos",
            movements: "analytics.revenue_movements", lifecycles: "analytics.subscription_lifecycles",
            subscriptions: "current_subscriptions")

        /// What had been recorded by `bounds.as_of`. The lifecycles' trial columns and the
        /// subscriptions' status are the views' own rules (migrations 0038 and 0021) over the
        /// transactions and renewal infos as of then, the status judged at `as_of` for `now()`.
        package static let asOf = Sources(
            ctes: """
                as_of_transactions AS MATERIALIZED (
                    SELECT t.* FROM bounds, analytics.transactions_as_of(bounds.as_of) t
                ), as_of_renewal_infos AS MATERIALIZED (
                    SELECT r.* FROM bounds, analytics.renewal_infos_as_of(bounds.as_of) r
                ), as_of_movements AS MATERIALIZED (
                    SELECT m.* FROM bounds, analytics.revenue_movements_as_of(bounds.as_of) m
                ), as_of_lifecycles AS (
                    SELECT c.original_transaction_id, c.environment, c.trial_started_at, c.first_paid_at,
                        coalesce(c.trial_started_at IS NOT NULL AND c.first_paid_at > c.trial_started_at, false) AS converted
                    FROM (
                        SELECT p.original_transaction_id,
                            (array_agg(p.environment ORDER BY p.purchase_date, p.transaction_id))[1] AS environment,
                            min(p.purchase_date) FILTER (WHERE p.free) AS trial_started_at,
                            min(p.purchase_date) FILTER (WHERE NOT p.free AND p.price_milli > 0) AS first_paid_at
                        FROM (SELECT t.*, analytics.is_free_trial(t.price_milli, t.offer_type, t.offer_discount_type) AS free
                              FROM as_of_transactions t WHERE t.type = 'Auto-Renewable Subscription') p
                        GROUP BY p.original_transaction_id) c
                ), as_of_subscriptions AS (
                    SELECT c.original_transaction_id, c.expires_date, c.environment,
                        CASE
                            WHEN c.revocation_date IS NOT NULL THEN 'revoked'
                            WHEN c.expires_date IS NOT NULL AND bounds.as_of >= c.expires_date THEN
                                CASE
                                    WHEN r.signed_date >= c.purchase_date AND bounds.as_of < r.grace_period_expires_date THEN 'in_grace_period'
                                    WHEN r.signed_date >= c.purchase_date AND r.is_in_billing_retry THEN 'in_billing_retry'
                                    ELSE 'expired'
                                END
                            ELSE 'active'
                        END AS status
                    FROM bounds,
                        (SELECT DISTINCT ON (t.original_transaction_id) t.* FROM as_of_transactions t
                         WHERE t.type IN ('Auto-Renewable Subscription', 'Non-Renewing Subscription') AND NOT t.is_upgraded
                         ORDER BY t.original_transaction_id, t.expires_date DESC NULLS FIRST, t.purchase_date DESC,
                             t.transaction_id DESC) c
                        LEFT JOIN as_of_renewal_infos r USING (original_transaction_id)
                ),
                """,
            transactions: "as_of_transactions", renewalInfos: "as_of_renewal_infos", movements: "as_of_movements",
            lifecycles: "as_of_lifecycles", subscriptions: "as_of_subscriptions")
    }
}
