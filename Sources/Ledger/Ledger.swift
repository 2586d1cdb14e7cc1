// Placeholder until the Ledger target lands.
