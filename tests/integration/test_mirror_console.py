"""The long-running commands as a service manager runs them (a log, a pipe, systemd): `geokafka mirror`
prints plain progress lines while it runs, and `mirror`, `guard` and `dashboard` stop within 10 s of
SIGTERM or Ctrl-C (SIGINT) with their summary, also when the signal reaches Spark's JVM too (systemd's
default stop signals every process of the service), leaving no process behind; a second signal stops
at once. (A service manager sends SIGKILL 10 s after its SIGTERM.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from kafka_util import create_topic, numbered_records, produce
from pipeline_util import GEOKAFKA, left_behind, mirror_command, wait_for_line, with_flows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]



STOP_S = 10.0


def stop_and_time(proc: subprocess.Popen, sigs: list[signal.Signals], group: bool) -> float:
    """Send ``sigs`` (to the whole process group with ``group``); seconds until the command exited."""
    started = time.monotonic()
    for sig in sigs:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        time.sleep(0.05)  # the second is meant to arrive while the flows stop
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        pass
    return time.monotonic() - started


def _mirror_of_40_records(base_topology, east, name: str, tmp_path: Path) -> tuple[str, Path, Path, subprocess.Popen]:
    """`geokafka mirror` of a flow ``name`` east -> west over 40 records, in a process group of its own:
    (flow, topology file, its log, the process)."""
    create_topic(east, name, partitions=2, rf=3)
    produce(east, name, numbered_records(40, 2))
    topology = with_flows(base_topology, **{name: {"source": "east", "target": "west", "topics": [name]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    log = tmp_path / "mirror.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(GEOKAFKA), "-f", str(path), "mirror", name], stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return name, path, log, proc


@pytest.mark.parametrize(("sigs", "group"), [([signal.SIGINT], False), ([signal.SIGTERM], False),
                                             ([signal.SIGTERM], True)],
                         ids=["ctrl-c", "sigterm", "sigterm-to-every-process"])
def test_mirror_prints_lines_and_stops_with_its_summary(base_topology, east, west, unique, tmp_path, sigs,
                                                        group) -> None:
    """A SIGTERM to the whole process group (the JVM stops at once, without waiting for geokafka) is a clean
    stop too."""
    flow, path, log, proc = _mirror_of_40_records(base_topology, east, unique("console"), tmp_path)
    try:
        wait_for_line(proc, log, f"flow {flow}: running, 40 records")
        took = stop_and_time(proc, sigs, group)
        assert proc.poll() == 0 and took < STOP_S, (took, log.read_text()[-3000:])
        assert not left_behind(proc.pid)  # Spark's JVM included
    finally:
        if left_behind(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert text.index(f"flow {flow}: running") < text.index("mirror stopped")  # lines while it runs
    summary = text[text.rindex("mirror stopped"):]
    assert f"flow {flow}: stopped, 40 records" in summary, text[-2000:]  # the same summary for both signals
    assert "Traceback" not in text and "KeyboardInterrupt" not in text and "rdkafka#" not in text
    assert "did not stop cleanly" not in text, text[-2000:]  # Spark stopping on the same signal is no failure
    # neither Spark's start-up lines nor the JVM's reach the console (Spark's stderr is geokafka's info log)
    assert "incubator" not in text and "Setting default log level" not in text, text[:1000]


def test_a_second_signal_stops_the_mirror_at_once(base_topology, east, west, unique, tmp_path) -> None:
    flow, _, log, proc = _mirror_of_40_records(base_topology, east, unique("console"), tmp_path)
    try:
        wait_for_line(proc, log, f"flow {flow}: running")
        took = stop_and_time(proc, [signal.SIGINT, signal.SIGINT], group=False)
        assert proc.poll() == 130 and took < STOP_S, (took, log.read_text()[-3000:])
        deadline = time.monotonic() + 5  # Spark's JVM was killed with it
        while left_behind(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left_behind(proc.pid)
    finally:
        if left_behind(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in log.read_text()


STRETCH_GUARD = {"cluster": "east", "dcs": {"east-a": {"brokers": 1, "controllers": 1},
                                            "east-b": {"brokers": 1, "controllers": 1},
                                            "east-c": {"brokers": 1, "controllers": 1}},
                 "topics": {"replication_factor": 3, "min_insync_replicas": 2}}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_guard_and_dashboard_stop_within_ten_seconds(base_topology, east, tmp_path, sig) -> None:
    """The guard watching a stretched cluster (east: one broker per rack) and the dashboard, each stopped
    while it works, each with its summary and nothing left behind."""
    data = base_topology.model_dump(mode="json", exclude_defaults=True)
    data["stretch"] = STRETCH_GUARD
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(data))
    for name, args, ready, said in [
        ("guard", ["guard", "--dry-run"], "guarding east", "guard stopped"),
        ("dashboard", ["dashboard", "--port", "0"], "dashboard on http://", "dashboard stopped"),
    ]:
        log = tmp_path / f"{name}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([str(GEOKAFKA), "-f", str(path), *args], stdout=out, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)
        try:
            wait_for_line(proc, log, ready, timeout_s=120)
            time.sleep(2)  # at work: a few looks at the cluster
            took = stop_and_time(proc, [sig], group=False)
            assert proc.poll() == 0 and took < STOP_S, (name, took, log.read_text()[-3000:])
            assert not left_behind(proc.pid)
        finally:
            if left_behind(proc.pid):
                os.killpg(proc.pid, signal.SIGKILL)
        text = log.read_text()
        assert said in text and "Traceback" not in text and "KeyboardInterrupt" not in text, text[-2000:]


def test_a_stop_of_every_process_while_spark_starts_is_a_clean_stop(base_topology, east, west, unique,
                                                                     tmp_path) -> None:
    """systemd stopping the service while Spark's JVM starts: the JVM exits first; still the summary, exit 0."""
    topic, flow = unique("console"), unique("console")
    create_topic(east, topic, partitions=2, rf=3)
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    log = tmp_path / "mirror.log"
    with log.open("w") as out:  # at info level Spark's own lines are logged: the first says its JVM runs
        proc = subprocess.Popen([str(GEOKAFKA), "--log-level", "info", "-f", str(path), "mirror", flow], stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "spark: " not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.05)
        assert "spark: " in log.read_text(), log.read_text()[-3000:]
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert f"flow {flow}: stopped" in text[text.rindex("mirror stopped"):], text[-2000:]
    assert "Traceback" not in text and "InternalError" not in text, text[-2000:]


def test_a_mirror_whose_every_flow_is_failed_over_exits_21_and_the_documented_unit_does_not_restart_it(
        base_topology, east, west, unique, tmp_path) -> None:
    """`failover` (from another process) ends the mirror's only flow: the mirror says so and exits with the answer
    code the docs' systemd unit lists in RestartPreventExitStatus; started again, it exits the same way at once."""
    flow, path, log, proc = _mirror_of_40_records(base_topology, east, unique("failed-over"), tmp_path)
    try:
        wait_for_line(proc, log, f"flow {flow}: running, 40 records")
        done = subprocess.run([str(GEOKAFKA), "-f", str(path), "failover", flow], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert proc.wait(120) == 21, log.read_text()[-3000:]
    finally:
        if left_behind(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert f"flow {flow}: failed-over" in text and "every flow of this mirror is failed over" in text, text[-2000:]
    unit = (Path(__file__).parents[2] / "docs" / "operations" / "running.md").read_text()
    prevented = {int(code) for line in unit.splitlines() if line.startswith("RestartPreventExitStatus=")
                 for code in line.split("=", 1)[1].split()}
    assert 21 in prevented and "Restart=always" in unit
    again = subprocess.run([str(GEOKAFKA), "-f", str(path), "mirror", flow], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 21, again.stdout[-2000:] + again.stderr[-2000:]


def test_a_flow_whose_clients_cannot_be_made_fails_alone_and_the_others_run(base_topology, east, west, unique,
                                                                               tmp_path) -> None:
    from geokafka.topology.schema import Cluster, Security

    good, broken = unique("alone"), unique("noca")
    create_topic(east, good, partitions=2, rf=3)
    produce(east, good, numbered_records(40, 2))
    missing = tmp_path / "gone" / "ca.pem"
    tls = Cluster(bootstrap=base_topology.clusters["east"].bootstrap, security=Security(protocol="SSL", ca_file=missing))
    topology = base_topology.model_copy(update={"clusters": {**base_topology.clusters, "tls": tls}})
    topology = with_flows(topology, **{good: {"source": "east", "target": "west", "topics": [good]},
                                       broken: {"source": "tls", "target": "west", "topics": [good]}})
    with mirror_command(topology, [good, broken], tmp_path) as mirror:
        mirror.wait_for_line(f"flow {good}: running, 40 records")
        took = stop_and_time(mirror.proc, [signal.SIGTERM], group=False)
        assert mirror.proc.poll() == 0 and took < STOP_S, (took, mirror.text()[-3000:])
    text = mirror.text()
    assert f"flow {broken} cannot run:" in text and str(missing) in text, text[-3000:]
    assert text.count(f"flow {broken} cannot run:") == 1 and "Traceback" not in text


def test_a_target_topic_the_cluster_refuses_puts_its_flow_in_error_and_the_others_run(base_topology, east, west,
                                                                                        unique, tmp_path) -> None:
    """A refusal that asking again cannot change (here the target name, ``east.`` + a 249-character source name, is
    longer than Kafka allows: INVALID_TOPIC_EXCEPTION) is the flow's ``error`` with the code, said once; the flow
    beside it runs. (Two brokers of one version accept the same topic configs, so INVALID_CONFIG itself cannot be
    provoked here; ``tests/unit/test_kafka_errors.py`` classifies it with the same rule.)"""
    from geokafka.errors import KafkaOperationError

    good = unique("beside")
    long_name = (unique("long") + "-" + "x" * 249)[:249]
    for topic in (good, long_name):
        create_topic(east, topic, partitions=2, rf=3)
        produce(east, topic, numbered_records(40, 2))
    refused = unique("refused")
    topology = with_flows(base_topology, **{good: {"source": "east", "target": "west", "topics": [good]},
                                            refused: {"source": "east", "target": "west", "topics": [long_name]}})
    with mirror_command(topology, [good, refused], tmp_path) as mirror:
        mirror.wait_for_line(f"flow {good}: running, 40 records")
        mirror.wait_for_line(f"flow {refused}: error")
        status = mirror.status()
        stop_and_time(mirror.proc, [signal.SIGTERM], group=False)
    proc, text = mirror.proc, mirror.text()
    # stopped with a flow in error, the mirror exits with that error's code, its one line last
    assert proc.poll() == KafkaOperationError.exit_code, text[-3000:]
    last = text.splitlines()[-1]
    assert last.startswith("KafkaOperationError:") and long_name in last and "TOPIC_EXCEPTION, not retriable" in last
    assert f"flow {refused}: retrying" not in text and "Traceback" not in text, text[-3000:]
    flows = {f["name"]: f for f in json.loads(status.stdout)["flows"]}
    assert flows[refused]["state"] == "error" and "TOPIC_EXCEPTION" in flows[refused]["reason"], status.stdout
    assert flows[good]["state"] == "running", status.stdout
