"""How many tasks a Spark master runs at once, how a mirror shares them among its flows, and which mode
its flows run in as slots come and go (pure).

In real-time mode every partition group's task runs for a whole batch, so a mirror needs a task
slot per group of every flow it runs: a group without a slot would wait for the batch's end (a
group whose executor was lost would wait there for its retry). With fewer live slots than that, the
flows run micro-batches, whose tasks share whatever slots there are, and return to real-time mode
once enough slots are back (:class:`ModeWatch`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["real-time", "micro-batch"]
REAL_TIME: Mode = "real-time"
MICRO_BATCH: Mode = "micro-batch"

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")


def task_slots(master: str, spark_conf: Mapping[str, str], cpus: int | None = None) -> int | None:
    """Tasks the master runs at once: local[N] N, local[*] the cores, local 1; for cluster masters what
    ``spark_conf`` says (``spark.cores.max``, or executors x cores per executor), None when it does not."""
    local = _LOCAL.match(master)
    if local is not None:
        threads = local.group(1)
        if threads is None:
            return 1
        return max(1, cpus or os.cpu_count() or 1) if threads == "*" else max(1, int(threads))
    if "spark.cores.max" in spark_conf:
        return max(1, int(spark_conf["spark.cores.max"]))
    if "spark.executor.instances" in spark_conf:
        return max(1, int(spark_conf["spark.executor.instances"]) * int(spark_conf.get("spark.executor.cores", "1")))
    return None


DEFAULT_GROUPS_WITHOUT_SLOTS = 2
"""Groups per flow when neither ``pipeline.partition_groups`` nor the master tells how many tasks run at once."""


def groups_per_flow(configured: int, slots: int | None, flows: int) -> int:
    """``pipeline.partition_groups`` when set, else the master's slots shared by the mirror's flows (at least 1 each)."""
    if configured > 0:
        return configured
    if slots is None:
        return DEFAULT_GROUPS_WITHOUT_SLOTS
    return max(1, slots // max(1, flows))


def master_with_slots(master: str, needed: int) -> str:
    """A local master with at least ``needed`` task threads (real-time mode runs every group at once);
    other masters as they are."""
    local = _LOCAL.match(master)
    if local is None:
        return master
    slots = task_slots(master, {})
    return master if slots is not None and slots >= needed else f"local[{needed}]"


@dataclass
class ModeWatch:
    """The mode a mirror's flows run in, from the application's live task slots (pure: the mirror feeds it the
    slot count it reads and the time).

    ``configured``: the topology's mode; ``needed``: the slots real-time mode needs (a slot per partition
    group of every flow). Fewer slots switch to micro-batches at once; enough slots switch back to real-time
    mode once they have stayed for ``settle_s`` (an executor that comes and goes restarts the queries once).
    """

    configured: Mode
    needed: int
    settle_s: float = 5.0
    mode: Mode = field(init=False)
    _enough_since: float | None = None

    def __post_init__(self) -> None:
        self.mode = self.configured

    def update(self, slots: int | None, now: float) -> Mode | None:
        """The mode to switch to now, or None to stay (also when the slots are not known)."""
        if self.configured != REAL_TIME or slots is None:
            return None
        if slots < self.needed:
            self._enough_since = None
            if self.mode == REAL_TIME:
                self.mode = MICRO_BATCH
                return self.mode
            return None
        if self.mode == MICRO_BATCH:
            if self._enough_since is None:
                self._enough_since = now
            if now - self._enough_since >= self.settle_s:
                self.mode = REAL_TIME
                return self.mode
        return None
