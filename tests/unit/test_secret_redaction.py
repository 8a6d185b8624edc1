"""Secrets never reach the user's screen: errors, failed Spark queries, status and CLI output."""

from __future__ import annotations

import json
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaError, KafkaException

from geokafka.cli.main import cli
from geokafka.control import admin as admin_module
from geokafka.control.admin import raise_mapped, refusal_of
from geokafka.control.connection import ClusterConnection, connection
from geokafka.errors import AuthError, ClusterUnreachableError, GeokafkaError, KafkaOperationError
from geokafka.monitoring.status import FlowStatus, StatusReport, mirror_details
from geokafka.pipeline.failures import failure_error
from geokafka.secrets import REDACTED, redact
from geokafka.topology import Topology, parse_topology

SECRET = 'Rdct-"s3cr3t"\\pw'
JAAS_FORM = 'Rdct-\\"s3cr3t\\"\\\\pw'  # the same secret as it appears inside a JAAS config

TOPOLOGY = """
clusters:
  east:
    bootstrap: kafka.example.com:9093
    security: {protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, username: gk, password: {env: GK_REDACT_PW}}
  west:
    bootstrap: kafka2.example.com:9093
flows:
  f: {source: east, target: west, topics: [orders]}
"""


@pytest.fixture
def topology(monkeypatch: pytest.MonkeyPatch) -> Topology:
    monkeypatch.setenv("GK_REDACT_PW", SECRET)
    return parse_topology(TOPOLOGY, "geokafka.yaml")


@pytest.fixture
def east(topology: Topology) -> ClusterConnection:
    return connection(topology, "east")  # reads the secret, so redact() knows it


def _raised(conn: ClusterConnection, exc: BaseException) -> GeokafkaError:
    with pytest.raises(GeokafkaError) as caught:
        raise_mapped(conn, "listing topics", exc)
    return caught.value


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError._AUTHENTICATION, KafkaError.UNKNOWN, KafkaError._SSL])
def test_kafka_errors_never_hold_the_secret(east: ClusterConnection, code: int) -> None:
    error = _raised(east, KafkaException(KafkaError(code, "something failed")))
    assert SECRET not in str(error) and JAAS_FORM not in str(error)
    assert "east" in str(error)
    assert SECRET not in repr(east)


def test_a_refused_login_is_an_auth_error_with_the_brokers_reason(east: ClusterConnection) -> None:
    recorder = admin_module._refusal_recorder(east)
    recorder(KafkaError(KafkaError._AUTHENTICATION,
                        "sasl_ssl://kafka.example.com:9093/bootstrap: SASL authentication error: Authentication "
                        "failed during authentication due to invalid credentials with SASL mechanism "
                        "SCRAM-SHA-512 (after 436ms in state AUTH_REQ)"))
    try:
        assert refusal_of(east) == ("SASL authentication error: Authentication failed during authentication due "
                                    "to invalid credentials with SASL mechanism SCRAM-SHA-512")
        for exc in (KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure")), FutureTimeout()):
            error = _raised(east, exc)
            assert isinstance(error, AuthError) and error.exit_code == 9
            assert str(error).startswith("cluster east: listing topics: the brokers refused the connection: SASL ")
            assert SECRET not in str(error)
        # other credentials for the same cluster are not blamed for it
        other = ClusterConnection(east.name, east.bootstrap, {**east.security, "sasl.password": "another-one"})
        assert isinstance(_raised(other, FutureTimeout()), ClusterUnreachableError)
    finally:
        admin_module._refusals.clear()


def test_a_failed_spark_query_is_reported_without_the_secret(east: ClusterConnection) -> None:
    jaas = east.spark_options()["kafka.sasl.jaas.config"]
    assert JAAS_FORM in jaas
    java = (
        "org.apache.spark.sql.streaming.StreamingQueryException: Failed to construct kafka consumer\n"
        f"Caused by: org.apache.kafka.common.KafkaException: bad option sasl.jaas.config={jaas}\n"
        f"Caused by: java.lang.IllegalArgumentException: Value not specified for key 'password {SECRET}'\n"
    )
    error = failure_error(None, False, java)
    assert isinstance(error, KafkaOperationError)
    assert SECRET not in str(error) and JAAS_FORM not in str(error)
    assert REDACTED in str(error)


def test_status_redacts_recorded_reasons(east: ClusterConnection) -> None:
    details = mirror_details({"state": "error", "reason": f"query failed: password={SECRET}"})
    assert details["reason"] == f"query failed: password={REDACTED}"


def test_cli_error_lines_and_json_are_redacted(
    topology: Topology, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")

    def failing_translate(topo: Topology, *_: Any, **__: Any) -> Any:
        connection(topo, "east")
        raise KafkaOperationError(f"cluster east: the broker said: sasl.password={SECRET} is odd")

    monkeypatch.setattr("geokafka.cli.offsets_cmd.translate_group", failing_translate)
    result = CliRunner().invoke(cli, ["-f", str(path), "offsets", "translate", "f", "-g", "g"],
                                env={"GK_REDACT_PW": SECRET})
    assert result.exit_code == 5
    assert result.stderr == f"KafkaOperationError: cluster east: the broker said: sasl.password={REDACTED} is odd\n"

    def status_with_a_secret(topo: Topology, *_: Any, **__: Any) -> StatusReport:
        connection(topo, "east")
        flow = FlowStatus("f", "east", "west", "error", "error", reason=f"raw reason {SECRET}",
                          source_error=f"raw source error {JAAS_FORM}")
        return StatusReport(0, [flow])

    monkeypatch.setattr("geokafka.cli.status_cmd.collect_status", status_with_a_secret)
    result = CliRunner().invoke(cli, ["-f", str(path), "status", "--json", "--sample", "0"],
                                env={"GK_REDACT_PW": SECRET})
    assert result.exit_code == 20, result.output  # a flow in error: scripts need a non-zero exit
    assert SECRET not in result.stdout and JAAS_FORM not in result.stdout
    data = json.loads(result.stdout)
    assert data["flows"][0]["reason"] == f"raw reason {REDACTED}"


def test_validate_never_reads_or_prints_secrets(topology: Topology, tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")
    for args in (["validate"], ["--json", "validate"]):
        result = CliRunner().invoke(cli, ["-f", str(path), *args], env={"GK_REDACT_PW": SECRET})
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output


def test_short_or_unknown_text_is_left_alone() -> None:
    assert redact("nothing secret here") == "nothing secret here"
