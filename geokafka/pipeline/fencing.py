"""Fencing a flow's writers: no transactional id of theirs can commit again, and their open
transactions are aborted now instead of holding read_committed readers until they expire.

What Kafka's ``Admin.fenceProducers`` does (KIP-618), done with the Python client: initialising a
transactional id bumps its producer epoch, which fences every older producer of the id and aborts
its open transaction.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import KafkaException, Producer

from geokafka.control.admin import raise_mapped
from geokafka.control.connection import ClusterConnection

PARALLEL = 16
"""Ids fenced at once: each is a FindCoordinator and an InitProducerId round trip."""


def fence(target: ClusterConnection, transactional_ids: list[str], timeout_s: float = 60.0) -> None:
    """Fence every id in ``transactional_ids`` on ``target``, side by side; the first failure is raised as
    the geokafka error it stands for (an unreachable target, a refused id, ...)."""
    if not transactional_ids:
        return

    def fence_one(txn_id: str) -> None:
        producer = Producer(target.librdkafka(**{"transactional.id": txn_id, "transaction.timeout.ms": 30_000}))
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            # not closed: close() after a failed init warns on stderr; the client goes with its last reference
            raise_mapped(target, f"fencing the writer {txn_id}", exc)
        producer.close()  # it wrote nothing: its work was the epoch bump

    with ThreadPoolExecutor(max_workers=min(PARALLEL, len(transactional_ids)), thread_name_prefix="fence") as pool:
        for done in [pool.submit(fence_one, txn_id) for txn_id in transactional_ids]:
            done.result()
