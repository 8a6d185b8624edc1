"""`geokafka where`, the dashboard's /api/flows/<flow> and the Java example of docs/clients.md (compiled with
javac from the page itself) say where a flow's applications connect, before and after a real failover."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from pipeline_util import GEOKAFKA, wait_for, with_flows

from geokafka.control.admin import ClusterAdmin
from geokafka.control.state_store import ensure_state_topic
from geokafka.failover.failover import failover
from geokafka.monitoring.dashboard import Dashboard

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def java_example() -> tuple[str, str]:
    """(class name, source) of the one ```java block of docs/clients.md."""
    [source] = re.findall(r"```java\n(.*?)```", (REPO / "docs" / "clients.md").read_text(encoding="utf-8"), re.DOTALL)
    name = re.search(r"public class (\w+)", source)
    assert name is not None
    return name.group(1), source


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def where_cli(topology_file: Path, flow: str) -> dict:
    done = subprocess.run([str(GEOKAFKA), "-f", str(topology_file), "where", flow, "--json"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Lines:
    """The lines a process prints, read in a thread."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True).start()


def test_where_the_dashboard_and_the_java_example_follow_a_failover(base_topology, east, west, unique, tmp_path):
    topic, flow = unique("where"), unique("where")
    ensure_state_topic(ClusterAdmin(west))  # as a mirror of the flow would have
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    topology_file = tmp_path / "geokafka.yaml"
    topology_file.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_none=True)))
    name, source = java_example()
    (tmp_path / f"{name}.java").write_text(source)
    subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / f"{name}.java")], check=True, timeout=180)

    with Dashboard(topology, [flow], port=0, interval_s=5.0) as board:
        api = f"{board.url}api/flows/{flow}"
        assert get(f"{board.url}api/flows/nope")[0] == 404
        java = subprocess.Popen(["java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                                 str(tmp_path), name, board.url.rstrip("/"), flow, "200"],
                                stdout=subprocess.PIPE, text=True)
        try:
            printed = Lines(java)
            wait_for(lambda: printed.lines, 60, "the Java example's first line")
            assert printed.lines[0].rstrip("\n") == (
                f"{flow}: active at east ({east.bootstrap}); {topic}: consume {topic}, produce {topic}")
            code, before = get(api)
            assert code == 200 and before == where_cli(topology_file, flow)
            assert (before["active_cluster"], before["since_ms"]) == ("east", None)

            report = failover(topology, flow)
            code, after = get(api)
            assert code == 200 and after == where_cli(topology_file, flow)
            assert (after["active_cluster"], after["bootstrap"], after["role"], after["settled"]) == (
                "west", west.bootstrap, "failed-over", True)
            assert after["since_ms"] >= report.finished_ms  # failover's last role record: the groups are moved
            assert after["topics"] == [{"topic": topic, "consume": [f"east.{topic}", topic], "produce": topic}]
            expected = (f"{flow}: failed-over at west ({west.bootstrap}) since {after['since']}; "
                        f"{topic}: consume east.{topic},{topic}, produce {topic}\n")
            wait_for(lambda: expected in printed.lines, 60, "the Java example's line after the failover")
        finally:
            java.kill()
            java.wait(30)
