"""What reading geokafka's state costs when the state topic is large: a million progress records and ten
thousand group checkpoints on the target, then the reads a running mirror and `status` make.

Measured in CPU time of this process (``time.process_time``: the Python thread and librdkafka's threads), on
the target's real ``__geokafka_state``, under a flow name of the bench's own.
"""

from __future__ import annotations

import json
import time
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.flow_states import FlowState
from geokafka.control.state_records import STATE_TOPIC, GroupCheckpoint, Heartbeat, Progress, partition_of
from geokafka.control.state_store import KafkaStateStore, ensure_state_topic

FLOW = "state-bench"


def fill_state(conn: ClusterConnection, progress_records: int, partitions: int, checkpoints: int) -> float:
    """Write ``progress_records`` progress records over ``partitions`` partitions and ``checkpoints`` group
    checkpoints (each group on every 10th partition) to the state topic; returns the seconds it took."""
    from confluent_kafka import Producer

    ensure_state_topic(ClusterAdmin(conn))
    producer = Producer(conn.librdkafka(**{"linger.ms": 50, "batch.size": 1_000_000, "compression.type": "lz4",
                                           "queue.buffering.max.messages": 500_000}))
    started = time.monotonic()

    def send(key: str, value: dict[str, Any]) -> None:
        while True:
            try:
                producer.produce(STATE_TOPIC, json.dumps(value).encode(), key.encode(), partition=partition_of(key))
                return
            except BufferError:
                producer.poll(0.05)

    for i in range(progress_records):
        record = Progress(FLOW, "orders", i % partitions, i // partitions + 1, 1_700_000_000_000 + i)
        send(record.key, record.encode())
        if i % 10_000 == 0:
            producer.poll(0)
    for g in range(checkpoints):
        offsets = {("orders", p): g + p for p in range(0, partitions, max(1, partitions // 10))}
        checkpoint = GroupCheckpoint(FLOW, f"group-{g}", offsets, 1_700_000_000_000 + g, {})
        send(checkpoint.key, checkpoint.encode())
    if producer.flush(120):
        raise RuntimeError("state bench: records not delivered")
    return time.monotonic() - started


def _cpu_ms(action: Any) -> float:
    started = time.process_time()
    action()
    return round((time.process_time() - started) * 1000, 1)


def time_state_reads(conn: ClusterConnection, progress_records: int = 1_000_000, partitions: int = 2000,
                     checkpoints: int = 10_000, repeats: int = 5) -> dict[str, Any]:
    """CPU of the first read of a large state topic, then of a heartbeat (the flow's state read, its role
    checked, its state written) and of the state half of a `status` read (progress, checkpoints and
    heartbeat of the flow), each the median of ``repeats`` runs with one new record between them."""
    fill_s = fill_state(conn, progress_records, partitions, checkpoints)
    store = KafkaStateStore(conn)
    first_wall = time.monotonic()
    first_cpu = _cpu_ms(lambda: store.read(timeout_s=300))
    first_wall = time.monotonic() - first_wall

    def heartbeat() -> None:
        store.read(timeout_s=30).role(FLOW)
        store.write(Heartbeat(FLOW, FlowState.RUNNING, int(time.time() * 1000), {"written": 1}))

    def status() -> None:
        state = store.read(timeout_s=30)
        state.progress_records(FLOW)
        state.checkpoints(FLOW)
        state.heartbeat(FLOW)
        state.source_ends(FLOW)

    beats = sorted(_cpu_ms(heartbeat) for _ in range(repeats))
    reads = sorted(_cpu_ms(status) for _ in range(repeats))
    store.close()
    return {"progress_records": progress_records, "partitions": partitions, "checkpoints": checkpoints,
            "fill_s": round(fill_s, 1), "first_read_cpu_ms": first_cpu, "first_read_s": round(first_wall, 2),
            "heartbeat_cpu_ms": beats[len(beats) // 2], "status_read_cpu_ms": reads[len(reads) // 2],
            "heartbeat_cpu_ms_all": beats, "status_read_cpu_ms_all": reads}
