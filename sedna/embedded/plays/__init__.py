"""The simulated LC's plays: each feature's part of the LC protocol beyond incremental learning.

A play is an `sedna.embedded.lc.LCPlay`; `default_plays()` gives a fresh instance of
each, for every simulated node. Add a feature's play as a module here and list it below.
"""

from __future__ import annotations

from sedna.embedded.lc import LCPlay
from sedna.embedded.plays.federated_learning import FederatedLearningPlay
from sedna.embedded.plays.joint_inference import JointInferencePlay
from sedna.embedded.plays.lifelong_learning import LifelongLearningPlay
from sedna.embedded.plays.multi_edge import MultiEdgeWorkersPlay


def default_plays() -> list[LCPlay]:
    """One new play of each feature the embedded mode simulates (plays keep per-node state)."""
    plays: list[LCPlay] = []
    plays.append(FederatedLearningPlay())
    plays.append(LifelongLearningPlay())
    plays.append(JointInferencePlay())
    plays.append(MultiEdgeWorkersPlay())
    return plays
