-- The comments of 0021 spelled entitlement sources in camelCase and described admin credits
-- that no API creates; the values come from the Customer document (snake_case).
COMMENT ON COLUMN analytics.entitlements.source IS 'subscription, non_consumable, non_renewing_subscription or admin (as the Customer document spells it).';
COMMENT ON TABLE analytics.balance_movements IS 'Debits (spending) of virtual-currency balances, one row per event, and credits should the ledger record any (no API creates them yet). Purchases and refunds of consumables are in the view balance_ledger.';
