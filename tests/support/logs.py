"""Re-exported from `sedna.testing`, where log capture lives."""

from sedna.testing.logs import LogCapture, capture_logs

__all__ = ["LogCapture", "capture_logs"]
