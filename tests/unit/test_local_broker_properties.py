"""The server.properties of a local node: settings that are geokafka's own choice (nothing is started)."""

from __future__ import annotations

from pathlib import Path

from geokafka.infra.local_cluster import LocalClusterSpec, NodeSpec, server_properties

KAFKA_INDEX_INTERVAL_BYTES = 4096  # Kafka's default log.index.interval.bytes: an entry per 4 KB appended at most
TIME_INDEX_ENTRY_BYTES = 12  # the larger of the two indexes' entries (offset index: 8)


def _spec(tmp_path: Path, **broker_config: str) -> LocalClusterSpec:
    return LocalClusterSpec("east", tmp_path, (NodeSpec(1, True, True, None, 28092, 28192),),
                            broker_config=broker_config)


def test_index_files_are_small_yet_hold_a_whole_segments_entries(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    props = server_properties(spec, spec.node(1))
    index = int(props["log.index.size.max.bytes"])
    entries = int(props["log.segment.bytes"]) // KAFKA_INDEX_INTERVAL_BYTES
    assert entries * TIME_INDEX_ENTRY_BYTES <= index  # a segment rolls at its size, not because an index filled
    assert index < 10 * 1024 * 1024  # below Kafka's default, whose preallocated holes the brokers faulted on


def test_a_clusters_own_broker_config_wins(tmp_path: Path) -> None:
    spec = _spec(tmp_path, **{"log.index.size.max.bytes": "1048576"})
    assert server_properties(spec, spec.node(1))["log.index.size.max.bytes"] == "1048576"
