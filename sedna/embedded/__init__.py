"""In-process stand-ins for the cluster (API server, edge nodes) used by tests and embedded mode."""
