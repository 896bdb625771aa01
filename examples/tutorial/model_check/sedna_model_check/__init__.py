"""model_check: a sedna-gm feature that checks every Model's format and URL."""
