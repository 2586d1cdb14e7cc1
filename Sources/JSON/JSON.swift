// Placeholder until the JSON target lands.
