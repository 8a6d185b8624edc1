"""Extra JVM options of local Kafka nodes and of Spark, from the environment (nothing is started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from geokafka.infra import local_cluster
from geokafka.infra.local_cluster import LOCAL_JVM_OPTIONS_ENV, LocalClusterSpec, NodeSpec
from geokafka.infra.processes import jvm_options_from_env


def _launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_jit: bool = False) -> list[str]:
    launched: list[list[str]] = []

    def fake_start(cmd: list[str], *_: Any) -> int:
        launched.append(cmd)
        return 1

    monkeypatch.setattr(local_cluster, "start_process", fake_start)
    spec = LocalClusterSpec("a", tmp_path, (NodeSpec(1, True, True, None, 28092, 28192),), quick_jit=quick_jit)
    local_cluster._launch_node(spec, spec.node(1), "cp")
    return launched[0]


def test_extra_options_reach_the_java_command_line_before_the_main_class(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCAL_JVM_OPTIONS_ENV, " -XX:TieredStopAtLevel=1  -Dx=y ")
    cmd = _launch(tmp_path, monkeypatch)
    main = cmd.index("kafka.Kafka")
    assert cmd.index("-XX:TieredStopAtLevel=1") < main and cmd.index("-Dx=y") < main
    assert "" not in cmd


def test_without_the_variable_a_node_gets_only_its_own_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCAL_JVM_OPTIONS_ENV, raising=False)
    assert jvm_options_from_env(LOCAL_JVM_OPTIONS_ENV) == []
    cmd = _launch(tmp_path, monkeypatch)
    assert not any(arg.startswith("-XX:Tiered") for arg in cmd)


def test_spark_takes_extra_jvm_options_from_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV

    monkeypatch.setenv(SPARK_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1 ")
    assert jvm_options_from_env(SPARK_JVM_OPTIONS_ENV) == ["-XX:TieredStopAtLevel=1"]
    monkeypatch.delenv(SPARK_JVM_OPTIONS_ENV)
    assert jvm_options_from_env(SPARK_JVM_OPTIONS_ENV) == []


def test_a_quick_jit_node_runs_the_quick_compiler_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from geokafka.infra.processes import QUICK_JIT

    monkeypatch.delenv(LOCAL_JVM_OPTIONS_ENV, raising=False)
    cmd = _launch(tmp_path, monkeypatch, quick_jit=True)
    assert QUICK_JIT == ["-XX:TieredStopAtLevel=1"]
    assert cmd.index("-XX:TieredStopAtLevel=1") < cmd.index("kafka.Kafka")


def test_spark_runs_the_quick_compiler_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from geokafka.infra.processes import extra_jvm_options
    from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV

    monkeypatch.delenv(SPARK_JVM_OPTIONS_ENV, raising=False)
    assert extra_jvm_options(False, SPARK_JVM_OPTIONS_ENV) == []
    assert extra_jvm_options(True, SPARK_JVM_OPTIONS_ENV) == ["-XX:TieredStopAtLevel=1"]
    monkeypatch.setenv(SPARK_JVM_OPTIONS_ENV, "-Dx=y")
    assert extra_jvm_options(True, SPARK_JVM_OPTIONS_ENV) == ["-XX:TieredStopAtLevel=1", "-Dx=y"]


def test_spark_with_the_full_jit_optimizes_late_and_the_variable_still_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    from geokafka.infra.processes import LATE_OPTIMIZING_JIT, extra_jvm_options
    from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV

    monkeypatch.delenv(SPARK_JVM_OPTIONS_ENV, raising=False)
    assert extra_jvm_options(False, SPARK_JVM_OPTIONS_ENV, full_jit=LATE_OPTIMIZING_JIT) == LATE_OPTIMIZING_JIT
    assert "-XX:Tier4InvocationThreshold=50000" in LATE_OPTIMIZING_JIT
    assert extra_jvm_options(True, SPARK_JVM_OPTIONS_ENV, full_jit=LATE_OPTIMIZING_JIT) == ["-XX:TieredStopAtLevel=1"]
    monkeypatch.setenv(SPARK_JVM_OPTIONS_ENV, "-XX:Tier4InvocationThreshold=5000")
    # the JVM takes the last of repeated options: the variable's come last
    options = extra_jvm_options(False, SPARK_JVM_OPTIONS_ENV, full_jit=LATE_OPTIMIZING_JIT)
    assert options[-1] == "-XX:Tier4InvocationThreshold=5000"


def test_the_demo_runs_every_jvm_with_the_quick_compiler(tmp_path: Path) -> None:
    """Five JVMs for a minute on two cores: the optimizing compiler took most of the brokers' CPU
    and the flow fell behind (see geokafka.drills.demo)."""
    from geokafka.drills.demo import demo_topology
    from geokafka.infra.clusters import local_cluster_specs

    topology = demo_topology(tmp_path)
    assert topology.pipeline.jit == "quick"
    specs = local_cluster_specs(topology)
    assert sorted(s.name for s in specs) == ["atl", "nyc"] and all(s.quick_jit for s in specs)


def test_jit_defaults_to_full_and_rejects_other_values() -> None:
    from geokafka.errors import TopologyError
    from geokafka.topology import parse_topology

    base = "clusters:\n  a: {bootstrap: '127.0.0.1:29092', local: {brokers: 1%s}}\npipeline: {master: 'local[2]'%s}\n"
    topology = parse_topology(base % ("", ""), "<t>")
    assert topology.clusters["a"].local is not None and topology.clusters["a"].local.jit == "full"
    assert topology.pipeline.jit == "full"
    with pytest.raises(TopologyError, match="jit"):
        parse_topology(base % (", jit: fast", ""), "<t>")
    with pytest.raises(TopologyError, match="jit"):
        parse_topology(base % ("", ", jit: C2"), "<t>")
