"""Interop tests: Sedna's own LC and Go GM as peers and oracles."""
