"""`geokafka mirror`'s progress when not on a terminal: plain lines, on change and every 10 s."""

from __future__ import annotations

from geokafka import errors
from geokafka.cli.mirror_cmd import LineProgress
from geokafka.control.flow_states import FlowState
from geokafka.pipeline.runner import PartitionProgress


class Runner:
    """What the progress reads of a FlowRunner."""

    def __init__(self, name: str) -> None:
        self.name, self.status, self.restarts, self.mode = name, FlowState.STARTING, 0, "real-time"
        self.error: errors.GeokafkaError | None = None
        self.progress: dict[tuple[str, int], PartitionProgress] = {}


def test_a_line_per_state_change_and_every_interval() -> None:
    lines: list[str] = []
    now = [0.0]
    progress = LineProgress(lines.append, every_s=10.0, clock=lambda: now[0])
    f = Runner("f")
    progress([f])  # type: ignore[list-item]
    f.status = FlowState.RUNNING
    f.progress[("orders", 0)] = PartitionProgress(next_offset=1234, written=1234, bytes=2_500_000)
    now[0] = 1.0
    progress([f])  # type: ignore[list-item]
    now[0] = 5.0
    progress([f])  # type: ignore[list-item]  # nothing new within 10 s
    now[0] = 11.0
    progress([f])  # type: ignore[list-item]
    f.status, f.error, f.restarts = FlowState.RETRYING, errors.ClusterUnreachableError("west is down"), 1
    now[0] = 12.0
    progress([f])  # type: ignore[list-item]
    f.status, f.error, f.mode = FlowState.RUNNING, None, "micro-batch"  # a task slot was lost
    now[0] = 13.0
    progress([f])  # type: ignore[list-item]
    f.mode = "real-time"
    now[0] = 14.0
    progress([f])  # type: ignore[list-item]
    assert lines == [
        "flow f: starting, 0 records, 0.0 MB, 0 partitions, 0 restarts, real-time mode",
        "flow f: running, 1,234 records, 2.5 MB, 1 partitions, 0 restarts, real-time mode",
        "flow f: running, 1,234 records, 2.5 MB, 1 partitions, 0 restarts, real-time mode",
        "flow f: retrying, 1,234 records, 2.5 MB, 1 partitions, 1 restarts, real-time mode, last error: west is down",
        "flow f: running, 1,234 records, 2.5 MB, 1 partitions, 1 restarts, micro-batch mode",
        "flow f: running, 1,234 records, 2.5 MB, 1 partitions, 1 restarts, real-time mode",
    ]
