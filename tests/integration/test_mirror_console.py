"""`geokafka mirror` when not on a terminal (a log, a pipe, systemd): plain progress lines while it
runs, and the same clean stop and summary on Ctrl-C (SIGINT) as on SIGTERM, also when the signal
reaches Spark's JVM too (systemd's default stop signals every process of the service)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kafka_util import create_topic, numbered_records, produce
from pipeline_util import with_flows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

GEOKAFKA = Path(sys.executable).with_name("geokafka")


@pytest.mark.parametrize(("sigs", "group"), [([signal.SIGINT], False), ([signal.SIGTERM], False),
                                             ([signal.SIGINT, signal.SIGINT], False), ([signal.SIGTERM], True)],
                         ids=["ctrl-c", "sigterm", "ctrl-c-twice", "sigterm-to-every-process"])
def test_mirror_prints_lines_and_stops_with_its_summary(base_topology, east, west, unique, tmp_path, sigs,
                                                        group) -> None:
    """A second Ctrl-C while the flows stop (Spark's own SIGINT handler was in place then) changes nothing;
    a SIGTERM to the whole process group (the JVM stops at once, without waiting for geokafka) neither."""
    topic, flow = unique("console"), unique("console")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, numbered_records(40, 2))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    log = tmp_path / "mirror.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(GEOKAFKA), "-f", str(path), "mirror", flow], stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=group)
    try:
        deadline = time.monotonic() + 240
        while f"flow {flow}: running, 40 records" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
        assert f"flow {flow}: running, 40 records" in log.read_text(), log.read_text()[-3000:]
        for sig in sigs:
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            time.sleep(0.05)  # the second is meant to arrive while the flows stop
        assert proc.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert text.index(f"flow {flow}: running") < text.index("mirror stopped")  # lines while it runs
    summary = text[text.rindex("mirror stopped"):]
    assert f"flow {flow}: stopped, 40 records" in summary, text[-2000:]  # the same summary for both signals
    assert "Traceback" not in text and "KeyboardInterrupt" not in text and "rdkafka#" not in text
    assert "did not stop cleanly" not in text, text[-2000:]  # Spark stopping on the same signal is no failure
    # neither Spark's start-up lines nor the JVM's reach the console (Spark's stderr is geokafka's info log)
    assert "incubator" not in text and "Setting default log level" not in text, text[:1000]


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
