// Placeholder until the EventStore target lands.
