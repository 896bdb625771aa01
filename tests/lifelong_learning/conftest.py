"""The lifelong-learning tests' fixtures: the shared ones of `support.fixtures` with this
directory's classes (imported, not registered globally, so the autouse mutation
detector stays here)."""

from __future__ import annotations

from collections.abc import Callable

from support.fixtures import _mutation_detector as _mutation_detector
from support.fixtures import api as api
from support.fixtures import harness_fixture
from support.fixtures import logs as logs
from support.fixtures import make_gm as make_gm
from support.fixtures import make_lc as make_lc

from .helpers import GM, Api, TestLC

GMFactory = Callable[..., GM]
LCFactory = Callable[[GM, str], TestLC]

harness = harness_fixture(GM, TestLC, Api)
