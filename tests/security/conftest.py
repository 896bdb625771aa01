"""The security tests drive the incremental-learning feature through the shared harness."""

from __future__ import annotations

from collections.abc import Callable

from incremental_learning.helpers import GM, Api, TestLC
from support.fixtures import api as api
from support.fixtures import harness_fixture
from support.fixtures import logs as logs
from support.fixtures import make_gm as make_gm
from support.fixtures import make_lc as make_lc

GMFactory = Callable[..., GM]
LCFactory = Callable[[GM, str], TestLC]

harness = harness_fixture(GM, TestLC, Api)
