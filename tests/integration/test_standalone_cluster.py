"""A flow on a real Spark standalone cluster: a master and two workers started from pyspark's own
``bin/spark-class``, as a user who outgrew one machine would run them. geokafka's jars reach the
executors with ``spark.jars``; the records are written by executor JVMs of the workers, exactly
once, in order, with their provenance."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kafka_util import create_topic, produce, read_all
from pipeline_util import wait_for, with_flows

from geokafka.control.provenance import source_position

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TOTAL = 30_000
PARTITIONS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture()
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``spark://`` URL of a master with two one-core workers, and the workers' work directory."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(_spark_class().parents[1]),
           "SPARK_LOG_DIR": str(tmp_path / "spark-logs")}
    port = _free_port()
    work = tmp_path / "work"
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        with open(tmp_path / f"{name}.log", "ab") as log:
            procs.append(subprocess.Popen([str(_spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                          env=env, start_new_session=True))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(_free_port()))
        wait_for(lambda: _listening(port), 120, "the Spark master")
        for n in (1, 2):
            start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--webui-port", str(_free_port()), "--cores", "1", "--memory", "1g",
                  "--work-dir", str(work / f"worker-{n}"), f"spark://127.0.0.1:{port}")
        log = tmp_path / "master.log"
        wait_for(lambda: log.read_text(errors="replace").count("Registering worker") >= 2, 120, "two workers")
        yield f"spark://127.0.0.1:{port}", work
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)


def test_a_flow_runs_exactly_once_on_a_standalone_cluster(base_topology, east, west, unique, tmp_path, standalone):
    master, work = standalone
    topic = unique("standalone")
    create_topic(east, topic, partitions=PARTITIONS, rf=1)
    topology = with_flows(base_topology, sa={"source": "east", "target": "west", "topics": [topic]})
    pipeline = topology.pipeline.model_copy(update={
        "master": master, "spark_conf": {"spark.executor.memory": "768m", "spark.cores.max": "2"}})
    topology_file = tmp_path / "standalone.yaml"
    topology_file.write_text(yaml.safe_dump(topology.model_copy(update={"pipeline": pipeline})
                                            .model_dump(mode="json", exclude_none=True)))
    now = int(time.time() * 1000)
    produce(east, topic, [{"key": f"k{i}".encode(), "value": f"{i:08d}".encode() * 16, "partition": i % PARTITIONS,
                           "timestamp": now + i, "headers": [("h", str(i).encode())]} for i in range(TOTAL)])
    mirror_log = tmp_path / "mirror.log"
    with open(mirror_log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "geokafka", "-f", str(topology_file), "--json", "mirror", "sa"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        def caught_up() -> bool:
            assert proc.poll() is None, mirror_log.read_text()[-3000:]
            return len(read_all(west, f"east.{topic}", timeout_s=60)) >= TOTAL

        wait_for(caught_up, 600, "the flow on the standalone cluster to copy every record")
        time.sleep(3)  # anything still in flight would show up as a duplicate now
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    source = {(r.partition, r.offset): r for r in read_all(east, topic)}
    target = read_all(west, f"east.{topic}", timeout_s=120)
    origins = [source_position(list(r.headers)) for r in target]
    assert len(target) == TOTAL, f"{len(target) - TOTAL:+d} records (duplicates if positive)"
    assert {(o.partition, o.offset) for o in origins if o is not None} == set(source)
    for rec, origin in zip(target, origins):
        assert origin is not None
        src = source[(origin.partition, origin.offset)]
        assert (rec.partition, rec.key, rec.value, rec.timestamp) == (src.partition, src.key, src.value, src.timestamp)
        assert ("h", src.headers[0][1]) in rec.headers
    # the records were written by executors the workers started, not by the driver
    executor_logs = list(work.glob("worker-*/app-*/*/stderr"))
    assert executor_logs, f"no executor ran on the workers (see {work})"
