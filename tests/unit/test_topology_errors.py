"""Broken topology files: every one is a single line naming the file, the line and the key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from geokafka.errors import TopologyError
from geokafka.topology import load_topology


@dataclass(frozen=True)
class Broken:
    """A broken file and what its error must say."""

    id: str
    text: str
    line: int | None  # None: the problem has no line (empty file, wrong top level)
    key: str  # key path shown in the message ("" when there is none)
    says: str  # fragment of the explanation


TWO = """\
clusters:
  a: {bootstrap: "10.0.0.1:9092"}
  b: {bootstrap: "10.0.0.2:9092"}
"""

CASES = [
    Broken("typo-in-key", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    locl: {brokers: 1}
""", 4, "clusters.a.locl", "unknown key"),
    Broken("unknown-top-level-key", TWO + "flowz: {}\n", 4, "flowz", "unknown key (did you mean 'flows'?)"),
    # the key the user typed comes first, not the required key it failed to give
    Broken("mistyped-required-key", """\
# two sites
clusters:
  b:
    bootstrap: 127.0.0.1:9192
  a:
    local: {brokers: 1}
    bootstrapp: 127.0.0.1:9092
""", 7, "clusters.a.bootstrapp", "unknown key (did you mean 'bootstrap'?) (and 1 more)"),
    Broken("mistyped-key-deep-in-stretch", """\
stretch:
  dcs:
    dc1: {brokers: 3, controllers: 1}
    dc2: {brokres: 3, controllers: 1}
""", 4, "stretch.dcs.dc2.brokres", "unknown key (did you mean 'brokers'?)"),
    Broken("mistyped-key-in-a-flow", TWO + """\
flows:
  f: {source: a, target: b, exlude: ["_.*"]}
""", 5, "flows.f.exlude", "unknown key (did you mean 'exclude'?)"),
    Broken("wrong-type", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local: {brokers: three}
""", 4, "clusters.a.local.brokers", "valid integer"),
    Broken("negative-brokers", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local:
      brokers: -1
""", 5, "clusters.a.local.brokers", "greater than or equal to 1"),
    Broken("racks-count-mismatch", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local:
      brokers: 3
      racks: [r1, r2]
""", 4, "clusters.a.local", "racks lists 2 entries but brokers is 3"),
    Broken("bootstrap-without-port", """\
clusters:
  a:
    bootstrap: kafka.example.com
""", 3, "clusters.a.bootstrap", "'kafka.example.com' is not host:port"),
    Broken("bootstrap-port-out-of-range", """\
clusters:
  a:
    bootstrap: "h1:9092,h2:99999"
""", 3, "clusters.a.bootstrap", "'h2:99999' is not host:port"),
    Broken("regex-does-not-compile", TWO + """\
flows:
  f:
    source: a
    target: b
    topics: ["orders-(eu|us"]
""", 8, "flows.f.topics", "does not compile"),
    Broken("exclude-regex-does-not-compile", TWO + """\
flows:
  f:
    source: a
    target: b
    exclude: ["ok", "[bad"]
""", 8, "flows.f.exclude", "regex '[bad' does not compile"),
    Broken("inline-password", """\
clusters:
  a:
    bootstrap: h:9093
    security:
      protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-512
      username: alice
      password: hunter2
""", 8, "clusters.a.security.password", "not allowed inline: use {env: VAR} or {file: PATH}"),
    Broken("secret-in-client-config", """\
clusters:
  a:
    bootstrap: h:9093
    client_config:
      client.id: geokafka
      sasl.password: hunter2
""", 6, "clusters.a.client_config.sasl.password", "holds a secret, which is never a plain value"),
    Broken("secret-in-broker-config", """\
clusters:
  a:
    bootstrap: localhost:9092
    local:
      broker_config: {ssl.keystore.password: hunter2}
""", 5, "clusters.a.local.broker_config.ssl.keystore.password", "holds a secret"),
    Broken("jaas-in-spark-conf", """\
clusters:
  a: {bootstrap: h:9093}
pipeline:
  spark_conf:
    spark.kafka.clusters.x.sasl.jaas.config: org.apache.kafka.common.security.plain.PlainLoginModule required;
""", 5, "pipeline.spark_conf.spark.kafka.clusters.x.sasl.jaas.config", "holds a secret"),
    Broken("login-module-under-another-key", """\
clusters:
  a: {bootstrap: h:9093}
pipeline:
  producer_config:
    sasl.mechanism.extra: "org.apache.kafka.common.security.scram.ScramLoginModule required username=u password=p;"
""", 5, "pipeline.producer_config.sasl.mechanism.extra", "JAAS login module line holds credentials"),
    Broken("secret-with-env-and-file", """\
clusters:
  a:
    bootstrap: h:9093
    security:
      key_password: {env: KEY_PW, file: /run/secrets/kp}
""", 5, "clusters.a.security.key_password", "exactly one of 'env' or 'file'"),
    Broken("sasl-without-username", """\
clusters:
  a:
    bootstrap: h:9093
    security: {protocol: SASL_SSL, sasl_mechanism: PLAIN, password: {env: PW}}
""", 4, "clusters.a.security", "needs sasl_mechanism, username and password"),
    Broken("unknown-protocol", """\
clusters:
  a:
    bootstrap: h:9093
    security: {protocol: TLS}
""", 4, "clusters.a.security.protocol", "'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL'"),
    Broken("flow-source-equals-target", TWO + """\
flows:
  loop:
    source: a
    target: a
""", 5, "flows.loop", "source and target are both 'a'"),
    Broken("flow-unknown-cluster", TWO + """\
flows:
  f:
    source: a
    target: c
""", 7, "flows.f.target", "unknown cluster 'c'"),
    Broken("flow-missing-target", TWO + """\
flows:
  f:
    source: a
""", 5, "flows.f.target", "required key is missing"),
    Broken("separator-illegal-in-topic-names", TWO + """\
flows:
  f: {source: a, target: b, separator: "/"}
""", 5, "flows.f.separator", "should match pattern"),
    Broken("separator-inside-cluster-name", """\
clusters:
  us-east: {bootstrap: "10.0.0.1:9092"}
  eu: {bootstrap: "10.0.0.2:9092"}
flows:
  f:
    source: eu
    target: us-east
    separator: "-"
""", 8, "flows.f.separator", "occurs in cluster name 'us-east'"),
    Broken("duplicate-port", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local: {brokers: 3}
  b:
    bootstrap: 127.0.0.1:9094
    local: {brokers: 1}
""", 7, "clusters.b.local", "port 9094 is also used by cluster 'a'"),
    Broken("controller-port-on-a-broker-port", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local: {brokers: 3, controller_port: 9093}
""", 4, "clusters.a.local", "port 9093 is also used"),
    Broken("local-ports-above-65535", """\
clusters:
  a:
    bootstrap: 127.0.0.1:65500
    local: {brokers: 3}
""", 4, "clusters.a.local", "ports run up to 65602, above 65535"),
    Broken("heap-too-small", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local: {heap_mb: 64}
""", 4, "clusters.a.local.heap_mb", "greater than or equal to 256"),
    # 128 MiB: the broker's log cleaner takes 128 MiB of heap at start, so the JVM dies there
    Broken("heap-that-the-log-cleaner-fills", """\
clusters:
  a:
    bootstrap: 127.0.0.1:9092
    local: {heap_mb: 255}
""", 4, "clusters.a.local.heap_mb", "greater than or equal to 256"),
    Broken("cluster-name-with-space", """\
clusters:
  new york: {bootstrap: "h:9092"}
""", 2, "clusters.new york", "should match pattern"),
    Broken("clusters-is-a-list", "clusters: [a, b]\n", 1, "clusters", "valid dictionary"),
    Broken("missing-clusters", "flows: {}\n", 1, "clusters", "required key is missing"),
    Broken("flows-without-clusters", "flows:\n  f: {source: a, target: b}\n", 1, "clusters",
           "required key is missing: flows name their source and target clusters there"),
    Broken("stretch-cluster-without-clusters", """\
stretch:
  cluster: main
  dcs: {d: {brokers: 3, controllers: 1}}
""", 2, "stretch.cluster", "'main' is not in clusters (known: none)"),
    Broken("duplicate-cluster-name", """\
clusters:
  a: {bootstrap: "10.0.0.1:9092"}
  b: {bootstrap: "10.0.0.2:9092"}
  a: {bootstrap: "10.0.0.3:9092"}
""", 4, "clusters.a", "duplicate key (first on line 2)"),
    Broken("stretch-without-controllers", TWO + """\
stretch:
  dcs:
    dc1: {brokers: 3}
""", 4, "stretch", "no DC has KRaft controllers"),
    Broken("invalid-yaml", """\
clusters:
  a:
    bootstrap: [127.0.0.1:9092
  b: {}
""", 4, "", "invalid YAML"),
    Broken("tab-indentation", "clusters:\n\ta: {}\n", 2, "", "invalid YAML: found character '\\t'"),
    Broken("two-documents", TWO + "---\nclusters: {}\n", 4, "", "invalid YAML: but found another document"),
    Broken("empty-file", "", None, "", "expected a mapping at the top level"),
    Broken("only-a-comment", "# nothing yet\n", None, "", "expected a mapping at the top level"),
    Broken("list-at-top-level", "- clusters\n- flows\n", None, "", "expected a mapping at the top level"),
    Broken("scalar-at-top-level", "geokafka\n", None, "", "expected a mapping at the top level"),
]


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "geokafka.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_broken_topology_is_one_line_naming_file_line_and_key(tmp_path: Path, case: Broken) -> None:
    path = _write(tmp_path, case.text)
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert "\n" not in message
    where = f"{path}:{case.line}: " if case.line is not None else f"{path}: "
    assert message.startswith(where), message
    if case.key:
        assert message.startswith(f"{where}{case.key}: "), message
    assert case.says in message, message
    assert caught.value.exit_code == 2
    # Never chained to the pydantic/yaml exception: the user sees one line, not a traceback.
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_an_unknown_key_with_no_close_match_gets_no_suggestion(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO.replace('a: {bootstrap: "10.0.0.1:9092"}', 'a: {bootstrap: "10.0.0.1:9092", zzz: 1}'))
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    assert str(caught.value) == f"{path}:2: clusters.a.zzz: unknown key"


def test_every_problem_is_counted_but_only_the_first_is_shown(tmp_path: Path) -> None:
    path = _write(tmp_path, """\
clusters:
  a:
    bootstrap: nowhere
    local: {brokers: 0, heap_mb: 1}
""")
    with pytest.raises(TopologyError, match=r":3: clusters\.a\.bootstrap: .* \(and 2 more\)$"):
        load_topology(path)


def test_two_flows_with_unknown_clusters_are_both_counted(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO + """\
flows:
  f1: {source: x, target: b}
  f2: {source: a, target: y}
""")
    with pytest.raises(TopologyError, match=r":5: flows\.f1\.source: unknown cluster 'x' \(and 1 more\)$"):
        load_topology(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(TopologyError, match=r"absent\.yaml: topology file not found$"):
        load_topology(path)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r": cannot read: Is a directory$"):
        load_topology(tmp_path)


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path, b'clusters:\n  a: {bootstrap: "h:1"}\n# caf\xe9\n')
    with pytest.raises(TopologyError, match=r"geokafka\.yaml:3: not UTF-8 text"):
        load_topology(path)


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    path = _write(tmp_path, """\
clusters:
  a: &common
    bootstrap: 127.0.0.1:9092
    client_config: {client.id: geokafka}
  b:
    <<: *common
    bootstrap: 127.0.0.1:9192
""")
    topology = load_topology(path)
    assert topology.clusters["b"].bootstrap == "127.0.0.1:9192"
    assert topology.clusters["b"].client_config == {"client.id": "geokafka"}
