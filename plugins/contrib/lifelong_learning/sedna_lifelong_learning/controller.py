"""The LifelongLearningJob controller: the runtime's stage machine with LL's hooks.

Everything staged jobs share (conditions, pods once per Ready, restarts, backoff,
Events, reports) is `sedna.runtime.StageMachine`'s; LL's own part is `feature`.
"""

from __future__ import annotations

from sedna.runtime import (
    DATASETS,
    SECRETS,
    ControllerContext,
    StageMachine,
)

from .feature import LifelongLearning
from .plugin import Options


class LifelongLearningController(StageMachine):
    """One per GM; `start`/`stop` are what the manager calls."""

    def __init__(self, ctx: ControllerContext) -> None:
        opts = ctx.options
        self.options = opts if isinstance(opts, Options) else Options.model_validate(opts or {})
        feature = LifelongLearning.create(
            datasets=ctx.informers.informer(DATASETS),
            secrets=ctx.kube.resource(SECRETS),
            lc_server=ctx.config.localController.server,
            kb_server=ctx.config.knowledgeBaseServer.server,
        )
        super().__init__(
            ctx,
            feature,
            self.options.stage_options(),
        )
