"""Sedna's FederatedLearningJob as a sedna-gm feature plugin."""
