"""Stretched-cluster drills on real local clusters: lose a DC and check the planner's verdict against reality."""

from geokafka.drills.stretch.compare import Comparison, DrillObservation, PartitionObservation, compare
from geokafka.drills.stretch.stretch import (
    WAN_NOTE,
    StretchDrillOptions,
    StretchDrillResult,
    raise_on_disagreement,
    run_stretch_drill,
)

__all__ = [
    "WAN_NOTE",
    "Comparison",
    "DrillObservation",
    "PartitionObservation",
    "StretchDrillOptions",
    "StretchDrillResult",
    "compare",
    "raise_on_disagreement",
    "run_stretch_drill",
]
