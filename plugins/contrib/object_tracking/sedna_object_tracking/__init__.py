"""sedna-gm feature plugin: ObjectTrackingService (tracking and ReID workers)."""
