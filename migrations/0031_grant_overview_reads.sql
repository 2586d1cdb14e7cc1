-- GET /v1/admin/metrics/overview (api.md §6) reads the analytics projection as the service: it
-- needs the subscriptions view (for churn, judged with the API's rules), nothing more. A view
-- reads its tables with its owner's rights, so this grants no write and no other table.
GRANT SELECT ON analytics.subscriptions TO iap_ledger_service;
