// Placeholder until the TestSupport target lands.
