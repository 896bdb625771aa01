"""sedna-gm feature plugin: ReidJob (one ReID worker pod)."""
