"""Valid topologies: defaults, derived ports, and the local cluster specs built from them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from geokafka.errors import TopologyError
from geokafka.infra.clusters import local_cluster_spec, local_cluster_specs
from geokafka.infra.local_cluster import ports_of, server_properties
from geokafka.topology import DEFAULT_FILE, load_topology, parse_topology
from geokafka.topology.ports import broker_ports, controller_ports, local_ports
from geokafka.topology.schema import Topology

REPO = Path(__file__).resolve().parents[2]

FULL = """
clusters:
  nyc:
    bootstrap: 127.0.0.1:19092
    local: {brokers: 3, racks: [nyc-a, nyc-b, nyc-c], heap_mb: 320, broker_config: {log.retention.hours: "1"}}
  atl:
    bootstrap: 127.0.0.1:29092
    local: {brokers: 2, mode: separate, controllers: 3}
  cloud:
    bootstrap: "b1.example.com:9093,b2.example.com:9093"
    security:
      protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-512
      username: geokafka
      password: {env: CLOUD_PASSWORD}
      ca_file: /etc/ssl/cloud-ca.pem
flows:
  nyc-to-atl:
    source: nyc
    target: atl
    topics: ["orders", "payments\\\\..*"]
    exclude: ["_.*"]
    groups: [".*"]
    sync: [configs, partitions, group-offsets]
  atl-to-cloud:
    source: atl
    target: cloud
    rename: identity
    transform: {filter: "key IS NOT NULL"}
stretch:
  dcs:
    dc1: {brokers: 2, controllers: 1}
    dc2: {brokers: 2, controllers: 1}
    dc3: {controllers: 1}
  topics: {partitions: 6, replication_factor: 4, min_insync_replicas: 3, acks: all}
"""


def test_full_topology_parses() -> None:
    topology = parse_topology(FULL, "full.yaml")
    assert sorted(topology.clusters) == ["atl", "cloud", "nyc"]
    assert topology.clusters["cloud"].security.password is not None
    assert topology.clusters["cloud"].security.password.env == "CLOUD_PASSWORD"
    assert topology.flows["nyc-to-atl"].topics == ["orders", "payments\\..*"]
    assert topology.flows["atl-to-cloud"].rename == "identity"
    assert topology.stretch is not None
    assert set(topology.stretch.topics) == {"default"}  # the single-topic shorthand
    assert topology.stretch.topics["default"].acks == "all"


def test_defaults() -> None:
    topology = parse_topology(
        "clusters: {a: {bootstrap: 'h:9092'}, b: {bootstrap: 'h:9093'}}\nflows: {f: {source: a, target: b}}"
    )
    flow = topology.flows["f"]
    assert (flow.topics, flow.exclude, flow.rename, flow.separator) == ([".*"], [], "prefix", ".")
    assert flow.groups == [] and flow.sync == ["configs", "partitions", "acls"] and flow.start == "earliest"
    assert topology.clusters["a"].security.protocol == "PLAINTEXT"
    assert topology.clusters["a"].local is None
    assert topology.pipeline.state_dir == Path(".geokafka/state")
    assert topology.pipeline.partition_groups == 0  # the master's task slots, shared by the mirror's flows
    assert (topology.pipeline.master, topology.pipeline.mode) == ("local[*]", "real-time")
    assert topology.stretch is None


def test_models_are_frozen() -> None:
    topology = parse_topology("clusters: {a: {bootstrap: 'h:9092'}}")
    with pytest.raises(ValueError):
        topology.clusters["a"].bootstrap = "elsewhere:9092"  # type: ignore[misc]


def test_stretch_acks_may_be_a_number() -> None:
    topology = parse_topology("clusters: {}\nstretch: {dcs: {d: {brokers: 1, controllers: 1}}, "
                              "topics: {replication_factor: 1, min_insync_replicas: 1, acks: 1}}")
    assert topology.stretch is not None and topology.stretch.topics["default"].acks == "1"


ONE_DC = "clusters: {}\nstretch:\n  dcs: {d: {brokers: 3, controllers: 1}}\n"


@pytest.mark.parametrize("acks", ["-1", "'-1'", '"-1"', "all"])
def test_stretch_acks_minus_one_is_kafkas_synonym_for_all(acks: str) -> None:
    shorthand = parse_topology(ONE_DC + f"  topics: {{acks: {acks}}}\n")
    assert shorthand.stretch is not None and shorthand.stretch.topics["default"].acks == "all"
    named = parse_topology(ONE_DC + f"  topics: {{t: {{acks: {acks}}}}}\n")
    assert named.stretch is not None and named.stretch.topics["t"].acks == "all"


@pytest.mark.parametrize("acks", ["-2", "2", "true", "everyone"])
def test_stretch_acks_other_values_are_refused(acks: str) -> None:
    with pytest.raises(TopologyError, match=r"stretch\.topics\.default\.acks: "):
        parse_topology(ONE_DC + f"  topics: {{acks: {acks}}}\n")


def test_smallest_heap_is_accepted_and_the_drill_option_has_the_same_floor() -> None:
    from click.testing import CliRunner

    from geokafka.cli.main import cli
    from geokafka.topology.schema import MIN_HEAP_MB

    topology = parse_topology(f"clusters: {{a: {{bootstrap: '127.0.0.1:9092', local: {{heap_mb: {MIN_HEAP_MB}}}}}}}")
    assert MIN_HEAP_MB == 256
    assert topology.clusters["a"].local is not None and topology.clusters["a"].local.heap_mb == 256
    result = CliRunner().invoke(cli, ["drill", "stretch", "--layout", "3dc", "--heap-mb", "128"])
    assert result.exit_code == 2 and "128 is not in the range 256<=x<=4096" in result.output


def test_the_repository_example_is_valid() -> None:
    topology = load_topology(REPO / DEFAULT_FILE)
    assert {"nyc", "atl"} <= set(topology.clusters)


def test_ports_of_a_combined_cluster() -> None:
    cluster = parse_topology(FULL).clusters["nyc"]
    assert broker_ports(cluster) == [19092, 19093, 19094]
    assert controller_ports(cluster) == [19192, 19193, 19194]
    assert local_ports(cluster) == [19092, 19093, 19094, 19192, 19193, 19194]


def test_ports_with_explicit_port_and_controller_port() -> None:
    cluster = parse_topology(
        "clusters: {a: {bootstrap: '127.0.0.1:7001', local: {brokers: 2, port: 7000, controller_port: 7500}}}"
    ).clusters["a"]
    assert broker_ports(cluster) == [7000, 7001]
    assert controller_ports(cluster) == [7500, 7501]


def test_spec_of_a_combined_cluster(tmp_path: Path) -> None:
    topology = parse_topology(FULL)
    spec = local_cluster_spec("nyc", topology.clusters["nyc"], tmp_path)
    assert [(n.node_id, n.is_broker, n.is_controller, n.rack) for n in spec.nodes] == [
        (1, True, True, "nyc-a"), (2, True, True, "nyc-b"), (3, True, True, "nyc-c"),
    ]
    assert spec.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert spec.home == tmp_path / "clusters" / "nyc"
    assert spec.heap_mb == 320
    assert sorted(ports_of(spec)) == local_ports(topology.clusters["nyc"])


def test_spec_of_a_cluster_with_separate_controllers(tmp_path: Path) -> None:
    topology = parse_topology(FULL)
    spec = local_cluster_spec("atl", topology.clusters["atl"], tmp_path)
    assert [n.node_id for n in spec.brokers] == [1, 2]
    assert [n.node_id for n in spec.controllers] == [101, 102, 103]
    assert all(not n.is_controller for n in spec.brokers)
    assert [n.controller_port for n in spec.controllers] == [29192, 29193, 29194]


def test_server_properties_of_a_rack_aware_combined_node(tmp_path: Path) -> None:
    topology = parse_topology(FULL)
    spec = local_cluster_spec("nyc", topology.clusters["nyc"], tmp_path)
    props = server_properties(spec, spec.node(2))
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "2"
    assert props["broker.rack"] == "nyc-b"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19093,CONTROLLER://127.0.0.1:19193"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["log.retention.hours"] == "1"  # broker_config is passed through
    assert props["log.dirs"] == str(tmp_path / "clusters" / "nyc" / "node-2" / "data")


def test_server_properties_of_a_single_broker_and_a_lone_controller(tmp_path: Path) -> None:
    topology = parse_topology(FULL)
    spec = local_cluster_spec("atl", topology.clusters["atl"], tmp_path)
    broker = server_properties(spec, spec.node(1))
    assert broker["process.roles"] == "broker" and "broker.rack" not in broker
    assert broker["offsets.topic.replication.factor"] == "2"
    controller = server_properties(spec, spec.node(101))
    assert controller["process.roles"] == "controller"
    assert "advertised.listeners" not in controller


def test_local_cluster_specs_skip_remote_clusters(tmp_path: Path) -> None:
    topology = parse_topology(FULL)
    assert [s.name for s in local_cluster_specs(topology)] == ["nyc", "atl"]
    assert [s.name for s in local_cluster_specs(topology, ["atl"])] == ["atl"]


@pytest.mark.parametrize(("name", "says"), [
    ("nope", "unknown cluster 'nope' (known: atl, cloud, nyc)"),
    ("cloud", "cluster 'cloud' has no local: block"),
])
def test_local_cluster_specs_reject_names_that_are_not_local_clusters(name: str, says: str) -> None:
    with pytest.raises(TopologyError) as caught:
        local_cluster_specs(parse_topology(FULL), ["nyc", name])
    assert says in str(caught.value)


def test_a_flow_is_found_by_name_or_named_among_the_known_ones() -> None:
    topology = parse_topology(FULL)
    assert topology.flow("atl-to-cloud").target == "cloud"
    with pytest.raises(TopologyError) as caught:
        topology.flow("nyc-to-cloud")
    assert str(caught.value) == "unknown flow 'nyc-to-cloud' (known: atl-to-cloud, nyc-to-atl)"
    with pytest.raises(TopologyError, match=r"unknown flow 'f' \(known: none\)"):
        Topology(clusters={}).flow("f")


def test_every_topology_field_has_a_description() -> None:
    """The descriptions are the reference of the topology file (JSON schema, validate's errors): none may be missing."""
    import inspect

    import pydantic

    from geokafka.topology import schema

    missing = [f"{name}.{field}" for name, cls in inspect.getmembers(schema, inspect.isclass)
               if issubclass(cls, pydantic.BaseModel) and cls.__module__ == schema.__name__
               for field, info in cls.model_fields.items() if not info.description]
    assert missing == []


def test_partition_groups_and_the_old_key_that_is_still_read_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """``pipeline.groups`` was the partition groups' key, beside a flow's ``groups`` (consumer groups)."""
    base = "clusters: {a: {bootstrap: 'h:9092'}, b: {bootstrap: 'h:9093'}}\nflows: {f: {source: a, target: b, " \
           "groups: ['orders-.*']}}\n"
    with caplog.at_level(logging.WARNING, logger="geokafka.topology"):
        renamed = parse_topology(base + "pipeline: {partition_groups: 3}")
    assert renamed.pipeline.partition_groups == 3 and renamed.flows["f"].groups == ["orders-.*"]
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="geokafka.topology"):
        old = parse_topology(base + "pipeline: {groups: 3}")
    assert old == renamed
    assert [r.getMessage() for r in caplog.records] == [
        "topology: pipeline.groups is now pipeline.partition_groups (a flow's groups are its consumer groups); "
        "read as partition_groups, rename it in the file"]
    with pytest.raises(TopologyError, match=r":3: pipeline: groups is the old name of partition_groups: give "
                                            r"partition_groups only"):
        parse_topology(base + "pipeline: {groups: 3, partition_groups: 2}")
    with pytest.raises(TopologyError, match="partition_groups"):
        parse_topology(base + "pipeline: {groups: 5000}")  # the old key is checked as the new one
