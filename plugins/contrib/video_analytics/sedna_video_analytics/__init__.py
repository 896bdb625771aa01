"""sedna-gm feature plugin: VideoAnalyticsJob (one worker pod and its Service)."""
