"""Offset translation timing: 1,000 groups x 12 partitions with the pure OffsetMapping."""

from __future__ import annotations

import random
import time
from typing import Any

from geokafka.control.offsets.translate import OffsetMapping


def time_translation(groups: int = 1000, partitions: int = 12, records: int = 100_000, txn: int = 500) -> dict[str, Any]:
    """Build one mapping per partition (``records`` replicated in transactions of ``txn`` with a marker
    each, plus interleaved gaps), then translate one committed offset per group and partition."""
    rng = random.Random(7)
    t0 = time.perf_counter()
    mappings = []
    for _ in range(partitions):
        m = OffsetMapping()
        target = 0
        for s in range(records):
            if s and s % txn == 0:
                target += 1  # commit marker on the target
            m.add(s, target)
            target += 1
        mappings.append(m)
    build_s = time.perf_counter() - t0
    commits = [[rng.randrange(0, records + 10) for _ in range(partitions)] for _ in range(groups)]
    t1 = time.perf_counter()
    n = 0
    for group in commits:
        for p, committed in enumerate(group):
            mappings[p].translate(committed, resume_at=records + records // txn)
            n += 1
    translate_s = time.perf_counter() - t1
    return {"groups": groups, "partitions": partitions, "translations": n, "records_per_partition": records,
            "runs_per_partition": mappings[0].runs, "index_build_s": round(build_s, 3),
            "translate_s": round(translate_s, 4), "target_s": 1.0, "met": translate_s < 1.0}
