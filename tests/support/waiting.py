"""Re-exported from `sedna.testing`, where the polling helpers live."""

from sedna.testing.waiting import poll, wait_until

__all__ = ["poll", "wait_until"]
