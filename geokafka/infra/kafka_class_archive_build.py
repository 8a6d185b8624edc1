"""Building Kafka's class archive: a single-node training cluster in a process of its own (``./run`` does it once)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from geokafka.artifacts import class_archives
from geokafka.infra.kafka_class_archive import archive_path
from geokafka.infra.local_cluster import (
    HOST,
    LOCAL_JVM_OPTIONS_ENV,
    LocalClusterSpec,
    NodeSpec,
    quiet_client_logger,
    start_cluster,
    stop_cluster,
)


def ensure_archive(timeout_s: float = 180.0) -> Path | None:
    """Build the archive unless it exists; returns its path, or None when the training run failed."""

    def train(staging: Path) -> bool:
        # the training node is the only JVM of that process that reads the variable
        env = {**os.environ, LOCAL_JVM_OPTIONS_ENV: f"-XX:ArchiveClassesAtExit={staging}"}
        try:
            result = subprocess.run(
                [sys.executable, "-m", "geokafka.infra.kafka_class_archive_build", "--train"],
                capture_output=True, text=True, timeout=timeout_s, check=False, env=env,
            )
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    return class_archives.build(archive_path(), train)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _train() -> None:
    """Start one node, write and read a few records (the classes a busy node loads), stop it cleanly."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with tempfile.TemporaryDirectory(prefix="geokafka-kafka-archive-") as home:
        broker_port = _free_port()
        controller_port = next(p for p in iter(_free_port, None) if p != broker_port)
        spec = LocalClusterSpec(name="class-archive", home=Path(home), heap_mb=256,
                                nodes=(NodeSpec(1, True, True, None, broker_port, controller_port),),
                                broker_config={"offsets.topic.num.partitions": "1"})
        try:
            start_cluster(spec, timeout_s=120)
            settings = {"bootstrap.servers": spec.bootstrap, "logger": quiet_client_logger()}
            admin = AdminClient(settings)
            admin.create_topics([NewTopic("training", 2, 1)])["training"].result(30)
            producer = Producer({**settings, "transactional.id": "training"})  # geokafka writes in transactions
            producer.init_transactions(30)
            producer.begin_transaction()
            for i in range(100):
                producer.produce("training", key=str(i).encode(), value=b"x" * 100, headers=[("h", b"v")])
            producer.commit_transaction(30)
            consumer = Consumer({**settings, "group.id": "training", "auto.offset.reset": "earliest",
                                 "isolation.level": "read_committed"})
            consumer.subscribe(["training"])
            seen = 0
            for _ in range(60):
                seen += len(consumer.consume(100, timeout=0.5))
                if seen >= 100:
                    break
            consumer.commit(asynchronous=False)
            consumer.close()
        finally:
            stop_cluster(spec)  # the JVM writes the archive as it exits


def main(argv: Sequence[str]) -> int:
    """``--train``: the training run (internal); no arguments: build the archive if missing."""
    if list(argv) == ["--train"]:
        _train()
        return 0
    if archive_path().exists():
        return 0
    print("==> building Kafka's class archive (once, about 15 s)", file=sys.stderr)
    if ensure_archive() is None:
        print("    could not build it; local brokers start without it (slower)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
