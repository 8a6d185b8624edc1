"""A node's storage from the kept checkpoint of its kind: which nodes are of one kind, and what is written."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from geokafka.infra import storage_format
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import _kafka_uuid, server_properties
from geokafka.topology import parse_topology

TOPOLOGY = """
clusters:
  east:
    bootstrap: 127.0.0.1:26092
    local: {brokers: 3, racks: [a, b, c]}
  west:
    bootstrap: 127.0.0.1:27092
    local: {brokers: 1}
  south:
    bootstrap: 127.0.0.1:28092
    local: {brokers: 1, broker_config: {num.io.threads: "2"}}
pipeline: {state_dir: /tmp/unused}
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEOKAFKA_CACHE", str(tmp_path / "cache"))


def _keys() -> dict[tuple[str, int], str]:
    specs = local_cluster_specs(parse_topology(TOPOLOGY, "test"))
    return {(s.name, n.node_id): storage_format.template_key("4.1.1", server_properties(s, n)) for s in specs
            for n in s.nodes}


def test_nodes_differing_only_in_what_names_them_are_of_one_kind() -> None:
    keys = _keys()
    assert keys[("east", 1)] == keys[("east", 2)] == keys[("east", 3)]  # ids, ports, racks, folders
    assert keys[("west", 1)] != keys[("south", 1)]  # a broker setting of its own
    assert keys[("east", 1)] != keys[("west", 1)]  # replication factors of the internal topics


def test_the_release_is_part_of_the_kind() -> None:
    specs = local_cluster_specs(parse_topology(TOPOLOGY, "test"))
    props = server_properties(specs[0], specs[0].nodes[0])
    assert storage_format.template_key("4.1.1", props) != storage_format.template_key("4.1.2", props)


def test_without_a_kept_checkpoint_nothing_is_written(tmp_path: Path) -> None:
    data = tmp_path / "node-1" / "data"
    assert not storage_format.format_from_template("k", data, 1, "cid", "did")
    assert not data.exists()


def test_a_copy_has_the_checkpoint_and_an_identity_of_its_own(tmp_path: Path) -> None:
    formatted = tmp_path / "node-1" / "data"
    formatted.mkdir(parents=True)
    (formatted / storage_format.CHECKPOINT).write_bytes(b"\x00checkpoint\xff")
    storage_format.keep_template("k", formatted)
    (formatted / storage_format.CHECKPOINT).write_bytes(b"changed later")
    storage_format.keep_template("k", formatted)  # the first kept stays

    copy = tmp_path / "node-2" / "data"
    assert storage_format.format_from_template("k", copy, 2, "cluster-x", "dir-y")
    assert (copy / storage_format.CHECKPOINT).read_bytes() == b"\x00checkpoint\xff"
    meta = dict(line.split("=", 1) for line in (copy / storage_format.META).read_text().splitlines())
    assert meta == {"node.id": "2", "directory.id": "dir-y", "version": "1", "cluster.id": "cluster-x"}
    assert sorted(p.name for p in copy.iterdir()) == [storage_format.CHECKPOINT, storage_format.META]


def test_ids_are_kafkas_shape() -> None:
    ids = {_kafka_uuid() for _ in range(200)}
    assert len(ids) == 200
    for value in ids:
        assert len(value) == 22 and not value.startswith("-") and "=" not in value
        assert len(base64.urlsafe_b64decode(value + "==")) == 16
