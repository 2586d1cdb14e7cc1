// Placeholder until the Service target lands.
