"""Stretched-cluster planning: placement, quorum and per-failure verdicts, as pure functions.

Nothing here does I/O: :func:`plan_stretch` turns a topology's ``stretch:`` block into a
:class:`StretchPlan`, which the CLI renders and the stretch drill checks against reality.
"""

from geokafka.planning.advice import Advice
from geokafka.planning.layout import DataCenter, Layout, layout_of
from geokafka.planning.placement import PartitionPlacement, QuorumPlacement, TopicPlacement, reassignment_json
from geokafka.planning.plan import StretchPlan, plan_stretch
from geokafka.planning.presets import PRESETS, TOPOLOGY, resolve_layout
from geokafka.planning.verdicts import Failure, PartitionOutcome, Verdict

__all__ = [
    "PRESETS",
    "TOPOLOGY",
    "Advice",
    "DataCenter",
    "Failure",
    "Layout",
    "PartitionOutcome",
    "PartitionPlacement",
    "QuorumPlacement",
    "StretchPlan",
    "TopicPlacement",
    "Verdict",
    "layout_of",
    "plan_stretch",
    "reassignment_json",
    "resolve_layout",
]
