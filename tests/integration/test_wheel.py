"""geokafka installed as a platform team installs it: `./run dist` builds the wheel, the project's pinned uv
installs it into a fresh virtual environment in a temporary folder, and that environment's `geokafka` runs
outside the checkout with neither Maven nor git on its PATH and an empty jar cache: `--version`, `validate`,
`plan`, a real `mirror` of a small topic from the session's east to its west (every record once, as
produced), `status` while it runs and `failover --dry-run` after it stopped; `up` without Kafka's jars
says in one line what is missing and how to fetch it, and starts nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_util import assert_same_records, create_topic, numbered_records, produce, read_all

import geokafka

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=150), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".venv" / "uv" / "bin" / "uv"  # ./run's pinned uv
LEFT_OFF_PATH = ("mvn", "mvnDebug", "mvnyjp", "git")


def path_without(names: tuple[str, ...], shadow: Path) -> str:
    """A PATH of one folder linking every command of this PATH but ``names`` (java stays where mvn lived)."""
    shadow.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        try:
            entries = sorted(Path(folder).iterdir())
        except OSError:
            continue
        for entry in entries:
            link = shadow / entry.name
            if entry.name not in names and not link.exists() and os.access(entry, os.X_OK) and entry.is_file():
                link.symlink_to(entry.resolve())
    return str(shadow)


def uv_pip_install(python: Path, wheel: Path) -> None:
    """The wheel with its dependencies at the project's pins, from uv's cache when it has them (pyspark is a
    source distribution: built once, then cached)."""
    cmd = [str(UV), "pip", "install", "-q", "--python", str(python), "-c", str(ROOT / "requirements.lock"), str(wheel)]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    if subprocess.run([*cmd, "--offline"], capture_output=True, env=env, check=False).returncode != 0:
        subprocess.run(cmd, capture_output=True, env=env, check=True, timeout=600)


def first_record_at(conn, topic: str, timeout_s: float) -> float:  # type: ignore[no-untyped-def]
    """time.monotonic() when ``topic`` on ``conn`` first holds a committed record."""
    admin = AdminClient(conn.librdkafka())
    consumer = Consumer(conn.librdkafka(**{"group.id": "test-wheel-first", "enable.auto.commit": False,
                                           "isolation.level": "read_committed"}))
    deadline = time.monotonic() + timeout_s
    try:
        while (md := admin.list_topics(timeout=10).topics.get(topic)) is None or not md.partitions:
            assert time.monotonic() < deadline, f"{topic} never created on the target"
            time.sleep(0.1)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions])
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                return time.monotonic()
        raise AssertionError(f"no record on {topic} within {timeout_s} s")
    finally:
        consumer.close()


def test_the_installed_wheel_mirrors_without_maven(base_topology, east, west, unique, tmp_path) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run([str(ROOT / "run"), "dist", str(dist)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = dist / f"geokafka-{geokafka.__version__}-py3-none-any.whl"
    assert wheel.is_file() and (dist / f"geokafka-{geokafka.__version__}.tar.gz").is_file(), built.stdout
    for jar in ("geokafka-spark.jar", "spark-kafka/kafka-clients-", "spark-kafka/spark-sql-kafka-0-10_2.13-"):
        assert f"geokafka/artifacts/packaged/{jar}" in built.stdout, built.stdout

    venv = tmp_path / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", str(Path(sys.executable).resolve()), str(venv)], check=True,
                   capture_output=True, timeout=120)
    installing = time.monotonic()
    uv_pip_install(venv / "bin" / "python", wheel)
    installed = time.monotonic()

    work = tmp_path / "work"  # outside the checkout; an empty jar cache: the wheel's jars or none
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME", "GEOKAFKA_FILE")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{path_without(LEFT_OFF_PATH, tmp_path / 'bin')}"
    env["GEOKAFKA_CACHE"] = str(tmp_path / "cache")

    def geokafka_cmd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["geokafka", *args], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)

    where = subprocess.run(["python", "-c", "import geokafka, shutil; print(geokafka.__file__, shutil.which('mvn'), "
                            "shutil.which('git'), shutil.which('java') is not None)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    module, mvn, git, java = where.stdout.split()
    assert module.startswith(str(venv)) and (mvn, git, java) == ("None", "None", "True"), where.stdout
    assert geokafka_cmd("--version").stdout == f"geokafka {geokafka.__version__}\n"

    # up without Kafka's jars (not in the wheel) and without mvn: one line, exit 3, nothing started
    (work / "local.yaml").write_text("clusters:\n  solo: {bootstrap: '127.0.0.1:27899', local: {brokers: 1}}\n"
                                     "pipeline: {state_dir: state}\n")
    up = geokafka_cmd("-f", "local.yaml", "up")
    assert up.returncode == 3 and up.stdout == "", (up.stdout, up.stderr)
    assert up.stderr.splitlines() == [
        f"EnvironmentError: `geokafka up` runs local clusters from Kafka 4.1.1's jars, which are not in "
        f"{tmp_path / 'cache' / 'jars' / 'kafka-4.1.1'}: `geokafka fetch-jars` fetches them from Maven Central "
        "(needs Maven)"]
    assert sorted(p.name for p in work.iterdir()) == ["local.yaml"]
    fetch = geokafka_cmd("fetch-jars")
    assert fetch.returncode == 3 and fetch.stderr.splitlines() == [
        "EnvironmentError: mvn not found on PATH: install Maven to fetch the Kafka jars"], fetch.stderr

    topic, flow = unique("wheel"), unique("wheel-flow")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, numbered_records(40, 2))
    source = read_all(east, topic)
    stretch = yaml.safe_load((ROOT / "geokafka.yaml").read_text())["stretch"]
    (work / "geokafka.yaml").write_text(yaml.safe_dump({
        "clusters": {name: {"bootstrap": base_topology.clusters[name].bootstrap} for name in ("east", "west")},
        "flows": {flow: {"source": "east", "target": "west", "topics": [topic]}},
        "pipeline": {"master": "local[2]", "state_dir": str(tmp_path / "state"), "trigger_ms": 100},
        "stretch": stretch,
    }))
    validate = geokafka_cmd("validate")
    assert (validate.returncode, validate.stdout) == (
        0, "geokafka.yaml: valid (2 clusters, 1 flows, a stretched cluster over 3 DCs)\n"), validate.stderr
    plan = geokafka_cmd("plan")
    assert plan.returncode == 0 and "dc1" in plan.stdout, plan.stdout + plan.stderr

    log = tmp_path / "mirror.log"
    with log.open("w") as out:
        mirror = subprocess.Popen(["geokafka", "mirror", flow], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  text=True, start_new_session=True)
    try:
        mirror_started = time.monotonic()
        first = first_record_at(west, f"east.{topic}", timeout_s=300)
        target = read_all(west, f"east.{topic}")
        deadline = time.monotonic() + 120
        while len(target) < len(source) and time.monotonic() < deadline:
            assert mirror.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
            target = read_all(west, f"east.{topic}")
        assert_same_records(source, target)  # every record once, keys, values, timestamps as produced
        status = geokafka_cmd("status")
        assert status.returncode == 0 and flow in status.stdout and "running" in status.stdout, \
            status.stdout + status.stderr
        mirror.send_signal(signal.SIGTERM)
        assert mirror.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if mirror.poll() is None:
            os.killpg(mirror.pid, signal.SIGKILL)
    text = log.read_text()
    assert "Traceback" not in text and f"flow {flow}: stopped, 40 records" in text, text[-3000:]

    failover = geokafka_cmd("failover", flow, "--dry-run")
    assert failover.returncode == 0 and "dry run: nothing changed" in failover.stdout, failover.stdout + failover.stderr
    assert read_all(west, f"east.{topic}") == target  # a dry run changes nothing
    assert not (tmp_path / "cache").exists()  # nothing fetched or built at run time: no jar, Spark home or archive
    load = os.getloadavg()
    print(f"\nwheel {wheel.stat().st_size / 1e6:.1f} MB; uv pip install {installed - installing:.1f} s; mirror start to the "
          f"first replicated record {first - mirror_started:.1f} s; install start to it {first - installing:.1f} s "
          f"(load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
