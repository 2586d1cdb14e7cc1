// Placeholder until the HTTP target lands.
