"""Extra JVM options of local Kafka nodes and of Spark, from the environment (nothing is started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from geokafka.infra import local_cluster
from geokafka.infra.local_cluster import LOCAL_JVM_OPTIONS_ENV, LocalClusterSpec, NodeSpec
from geokafka.infra.processes import jvm_options_from_env


def _launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    launched: list[list[str]] = []

    def fake_start(cmd: list[str], *_: Any) -> int:
        launched.append(cmd)
        return 1

    monkeypatch.setattr(local_cluster, "start_process", fake_start)
    spec = LocalClusterSpec("a", tmp_path, (NodeSpec(1, True, True, None, 28092, 28192),))
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
