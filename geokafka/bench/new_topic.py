"""A topic created under a running replicator: how long until the replicator copies it.

The replicator runs over a topic set whose pattern also matches :attr:`~geokafka.bench.setup.TopicSet.newcomer`;
the measurement creates that topic on the source, writes one record to it, and times until the record is visible
(read_committed) on the target. What it measures is the replicator's topic refresh (geokafka's selection job,
MirrorMaker 2's ``refresh.topics.interval.seconds``, each at the same period in the bench) plus what the replicator
then does to start copying the topic (geokafka restarts its query over every partition; MirrorMaker 2 reconfigures
its tasks). The target's topic is looked for once a second, so the figure is that coarse.
"""

from __future__ import annotations

import time
from typing import Any

from geokafka.bench.setup import DST, SRC, create_topic
from geokafka.bench.watch import TargetCounter
from geokafka.control.admin import silent_logger


def new_topic_pickup(source_topic: str, target_topic: str, partitions: int, timeout_s: float = 180.0) -> dict[str, Any]:
    """Create ``source_topic`` (``partitions`` partitions) on the bench's source, write one record, and time until it
    is visible in ``target_topic`` on the target: ``picked_up_s`` (None when it was not within ``timeout_s``, or
    when the topic or its record could not be written: ``error`` says why, and the contender's other figures stay)."""
    from confluent_kafka import Producer

    out: dict[str, Any] = {"topic": source_topic, "partitions": partitions, "picked_up_s": None, "timeout_s": timeout_s}
    counter = TargetCounter(DST, [target_topic], 1).start()
    try:
        started = time.monotonic()
        create_topic(SRC, source_topic, partitions)
        producer = Producer({"logger": silent_logger(), "bootstrap.servers": SRC, "acks": "all"})
        producer.produce(source_topic, b"newcomer", key=b"newcomer", partition=0)
        if producer.flush(30):
            raise RuntimeError(f"the record to the new topic {source_topic} was not delivered")
        counter.wait(timeout_s)
        if counter.done_at is not None:
            out["picked_up_s"] = round(counter.done_at - started, 2)
    except Exception as exc:  # noqa: BLE001 - a failed write is this figure's, not the contender's whole row
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        counter.stop()
    return out
