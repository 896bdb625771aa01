"""A plugin whose import fails, as a plugin with a missing dependency does."""

import sedna_no_such_dependency  # noqa: F401
