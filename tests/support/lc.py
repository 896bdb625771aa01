"""Re-exported from `sedna.testing`, where the Go-protocol test LC lives."""

from sedna.testing.lc import GO_HELLO, LCBase, Received

__all__ = ["GO_HELLO", "LCBase", "Received"]
