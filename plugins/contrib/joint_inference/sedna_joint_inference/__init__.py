"""Sedna's JointInferenceService as a sedna-gm feature plugin (entry point `joint_inference`)."""
