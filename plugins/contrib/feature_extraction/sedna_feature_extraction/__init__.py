"""sedna-gm feature plugin: FeatureExtractionService (a Deployment and its Service)."""
