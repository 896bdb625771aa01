"""sedna-gm feature plugin: ObjectSearchService (user, tracking and ReID workers)."""
