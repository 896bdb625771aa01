"""Re-exported from `sedna.testing`, where the GM harness lives."""

from sedna.testing.gm import GMHarness

__all__ = ["GMHarness"]
