// Placeholder until the AppStore target lands.
