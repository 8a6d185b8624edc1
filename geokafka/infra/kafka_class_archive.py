"""A class-data-sharing archive of Kafka's classes, so a local broker starts in less CPU.

A local node's JVM spends most of its start loading and verifying the broker's classes:
measured on this project's 2-core machine, a 3-node cluster (quick compiler only) was ready
in 6.2-7.5 s for 8.2-9.6 CPU s with the archive against 9.7-10.4 s for 13.0-14.3 CPU s
without, and a storage format took 0.95 instead of 1.5 CPU s. The demo, ``geokafka up``,
the drills and the test suite start many nodes, often beside a busy Spark.

The archive is built once per JDK and Kafka jar set (``./run`` does it; ``python -m
geokafka.infra.kafka_class_archive_build``), by a single-node training cluster that exits
cleanly; it lives with the jar cache, so every checkout on the machine shares it. Until it
exists, nodes start without it.
"""

from __future__ import annotations

from pathlib import Path

from geokafka.artifacts import class_archives, jars


def archive_path() -> Path:
    """Where the archive for this JDK and the Kafka jars lives (it may not exist)."""
    return class_archives.archive_path("kafka", sorted(jars.jar_dir(jars.KAFKA).glob("*.jar")))


def java_options() -> list[str]:
    """JVM options that map the archive when it has been built (none otherwise)."""
    return class_archives.use_options(archive_path())
