"""`dashboard` against a live flow: /api/status, /metrics, and the page rendered by headless Chromium."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from kafka_util import create_topic, produce
from pipeline_util import GEOKAFKA, running_mirror, wait_for, with_flows
from prometheus_client.parser import text_string_to_metric_families

from geokafka.monitoring.dashboard import Dashboard
from geokafka.topology.schema import Topology

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def fetch(url: str) -> tuple[str, str]:
    """(content type, body) of a GET."""
    with urllib.request.urlopen(url, timeout=30) as res:
        return res.headers["Content-Type"], res.read().decode()


def chromium(url: str, profile: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on ``url`` (no network beyond it, no first-run work)."""
    return subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--window-size=1280,900", "--virtual-time-budget=5000", *mode, url],
        capture_output=True, text=True, timeout=180, check=False,
    )


def records(n: int, partitions: int, start: int = 0) -> list[dict]:
    now = int(time.time() * 1000)
    return [{"key": f"k{i}".encode(), "value": f"value-{i}".encode() * 8, "partition": i % partitions,
             "timestamp": now + i} for i in range(start, start + n)]


def slow(topology: Topology) -> Topology:
    """At most 20 records per half-second micro-batch, so lag visibly drains over the samples."""
    pipeline = topology.pipeline.model_copy(update={"mode": "micro-batch", "trigger_ms": 500,
                                                    "max_records_per_batch": 20})
    return topology.model_copy(update={"pipeline": pipeline})


def test_dashboard_serves_api_metrics_and_a_page_with_flows_and_charts(base_topology, east, west, unique, tmp_path):
    topic, flow = unique("dash"), unique("dash")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, records(300, 2))
    topology = slow(with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}}))
    with running_mirror(topology), Dashboard(topology, [flow], port=0, interval_s=1.0) as board:
        def running_samples() -> int:
            series = board.sampler.history.series().get(flow, [])
            return sum(1 for point in series if point["state"] == "running")

        def replicating() -> bool:
            latest = board.sampler.history.latest
            return running_samples() >= 4 and latest is not None and (latest.flow(flow).written or 0) > 0

        wait_for(replicating, 180, "samples of a running flow whose heartbeat counts written records")
        produce(east, topic, records(200, 2, start=300))  # a burst: lag jumps, then drains
        seen = running_samples()
        wait_for(lambda: running_samples() >= seen + 4, 60, "four more samples")

        kind, body = fetch(f"{board.url}api/status")
        api = json.loads(body)
        assert kind.startswith("application/json") and api["error"] is None
        [shown] = api["report"]["flows"]
        assert (shown["name"], shown["state"], shown["source"], shown["target"]) == (flow, "running", "east", "west")
        assert len(api["history"][flow]) >= 8 and shown["throughput"] is not None
        assert max(p["lag_records"] for p in api["history"][flow]) > 0

        kind, body = fetch(f"{board.url}metrics")
        assert kind.startswith("text/plain; version=0.0.4")
        families = {f.name: f for f in text_string_to_metric_families(body)}
        assert [s.value for s in families["geokafka_flow_up"].samples] == [1.0]
        assert {s.labels["partition"] for s in families["geokafka_replication_lag_records"].samples} == {"0", "1"}
        assert families["geokafka_replicated_records"].samples[0].value > 0

        if CHROMIUM is None:
            pytest.skip("chromium is not installed (./run installs it): the page was not rendered")
        dom = chromium(board.url, tmp_path / "profile-dom", "--dump-dom")
        shot = tmp_path / "dashboard.png"
        snap = chromium(board.url, tmp_path / "profile-shot", f"--screenshot={shot}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert f'data-flow="{flow}"' in html and 'data-state="running"' in html
    assert 'data-series="lag"' in html and 'data-series="throughput"' in html
    assert html.count("<polyline") >= 2, "both charts draw a line"
    assert "no data yet" not in html and "waiting for the first status sample" not in html
    assert snap.returncode == 0 and shot.exists() and shot.stat().st_size > 10_000, snap.stderr[-2000:]
    print(f"dashboard screenshot: {shot}")


def test_dashboard_command_serves_until_sigterm(base_topology, east, west, unique, tmp_path):
    topic, flow = unique("dcmd"), unique("dcmd")
    create_topic(east, topic, partitions=1, rf=3)
    produce(east, topic, records(3, 1))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    proc = subprocess.Popen([str(GEOKAFKA), "-f", str(path), "--json", "dashboard", "--port", "0", "--interval", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = ""
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, f"dashboard exited: {proc.stderr.read() if proc.stderr else ''}"
            text += line
            try:
                info = json.loads(text)
                break
            except ValueError:
                continue
        assert fetch(f"{info['url']}healthz")[1] == "ok\n"
        api = wait_for(lambda: (lambda a: a if a["samples"] >= 1 else None)(json.loads(fetch(info["api"])[1])),
                       60, "a first sample")
        [shown] = api["report"]["flows"]
        assert (shown["name"], shown["state"], shown["rpo"]["records"]) == (flow, "not-started", 3)
        assert "geokafka_flow_rpo_records" in fetch(info["metrics"])[1]
        assert "<title>geokafka dashboard</title>" in fetch(info["url"])[1]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0
