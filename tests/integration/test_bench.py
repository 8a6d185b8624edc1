"""`geokafka bench --quick --records 1k --json`: every contender runs and the numbers are sane (no timing targets).

The 100 B run is the same code with another record size and cost the suite ~40% of the bench's
time (more contender starts); the test runs the 1 KiB one, which adds the latency probes, and the
scaling section (geokafka and MirrorMaker 2 at 6 topics x 10, with their idle cost and a topic created
under each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from geokafka.bench.setup import BENCH_JVM_OPTIONS_ENV

# The quick bench (both record sizes) took ~190 s on a quiet machine and 470-600+ s beside the rest
# of the suite (load 15-29): the hang guard is its subprocess's own 1200 s, not pytest's default 600 s.
pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=300), pytest.mark.timeout(1260)]


def test_bench_quick_runs_every_contender(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "geokafka", "--json", "bench", "--quick", "--records", "1k", "--out", str(out)],
        capture_output=True, text=True, timeout=1200, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert json.loads(out.read_text())["runs"].keys() == report["runs"].keys()
    assert set(report["runs"]) == {"1k"}
    assert report["sizes"]["datasets"] == ["1k"]
    # the contenders' JVMs started with what the environment asks (the suite's conftest: the quick compiler)
    assert report["jvm_options"] == {"contenders": os.environ[BENCH_JVM_OPTIONS_ENV].split()}
    for label, run in report["runs"].items():
        assert "geokafka-micro-batch" not in run  # the full run's only
        for name in ("raw", "limit", "mm2", "mm2-eos", "spark-kafka", "geokafka"):
            result = run[name]
            assert result["ran"], f"{label}/{name} did not run: {result.get('reason')}"
            assert result["compression"] == "lz4"  # every writer as geokafka's default writes (the contract's)
            assert result["records_per_s"] > 0 and result["mb_per_s"] > 0
            if name != "raw":
                assert result["peak_threads"] > 0 and result["peak_sockets"] > 0
                assert result["cpu_s_per_gb"] > 0 and result["peak_rss_mb"] > 0
                # the later half of the records, measured on its own, unless one commit made the half and the
                # rest visible together (a transactional writer's short copy): then the bench says so
                half = result.get("second_half")
                if half is None:
                    assert result["second_half_unmeasured"], name
                else:
                    assert 0 < half["records"] < result["records"] and half["records_per_s"] > 0
        assert run["ratios"]["geokafka_over_mm2"] is not None
        assert run["ratios"]["geokafka_over_raw"] is not None
        assert run["ratios"]["geokafka_over_mm2_eos"] is not None
        assert run["ratios"]["geokafka_over_limit"] is not None
        # the exactly-once writers' batches were transactional (commit markers between the records), the others'
        # plain: a MirrorMaker 2 whose exactly-once setting was not its target's wrote plain batches unnoticed
        assert {name: run[name].get("transactional_writes") for name in ("limit", "mm2", "mm2-eos", "geokafka")} == {
            "limit": False, "mm2": False, "mm2-eos": True, "geokafka": True}
        # the throughput window opens when geokafka writes its first record, not at its first commit
        assert run["geokafka"]["basis"].startswith("first record written")
        # whether the Spark driver started from its class archive (`./run tests` builds it beside the tests)
        assert isinstance(run["geokafka"]["config"]["class_archive"], bool)
        # the CPU of the JVM's compiler threads inside that window (a fresh JVM compiles as it copies)
        assert 0 < run["geokafka"]["jit_cpu_s"] <= run["geokafka"]["cpu_s"] + 0.5
    for name in ("limit", "mm2", "mm2-eos", "spark-kafka", "geokafka"):
        lat = report["runs"]["1k"][name]["latency"]
        assert 0 < lat["received"] <= lat["sent"]  # the probe's own records only
        assert lat["warmup_s"] == 2.0  # the quick bench's warm-up traffic, not counted
        assert 0 < lat["machine_busy_percent"] <= 100  # how busy the machine was: a saturated one measures itself
        assert 0 <= lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"]
    # the larger shape spreads its partitions over topics of 10, as the full run's 2,000 and 5,000 do
    scaling = [(row["contender"], row["topics"], row["partitions"]) for row in report["scaling"]]
    assert scaling == [("geokafka", 6, 60), ("mm2", 6, 60)]
    for row in report["scaling"]:
        assert row["ran"], row.get("reason")
        assert row["counted_after"]  # the target's ends watched while it copied; every record counted after
        assert row["records_per_s"] > 0 and row["threads"] > 0 and row["sockets"] > 0 and row["peak_rss_mb"] > 0
        assert 0 <= row["p50_ms"] <= row["p99_ms"] and row["target_broker_cpu_s"] >= 0
        # the probe writes to every partition and reads one of each topic; what it read arrived
        probe = row["probe"]
        assert probe["read_partitions"] == row["topics"] and 0 < probe["received"] == probe["read"]
        assert 0 < row["latency_machine_busy_percent"] <= 100
    for row in report["scaling"]:
        if row["contender"] == "geokafka":  # what `geokafka status` of the running flow cost, as an operator runs it
            status = row["status"]
            assert status["exit"] == 0 and status["cpu_s"] > 0 and status["wall_s"] > 0 and status["lines"] > 2
    idle = report["scaling"]
    assert all(row["idle_cpu_percent"] >= 0 and row["idle_target_broker_cpu_percent"] >= 0 for row in idle)
    assert all("__geokafka_state" in row["idle_growth_mb_per_hour"] for row in idle)
    # beside MirrorMaker 2, both copied a topic of the set created under them (each refreshing every 10 s)
    assert all(row["new_topic_s"] is not None and 0 < row["new_topic_s"] < 180 for row in idle)
    assert report["translation"]["translations"] == 12_000
    reads = report["state_reads"]
    assert reads.get("ran", True), reads.get("reason")
    assert reads["progress_records"] == 50_000 and 0 < reads["first_read_cpu_ms"]
    assert 0 <= reads["heartbeat_cpu_ms"] and 0 <= reads["status_read_cpu_ms"]
    assert {t["target"] for t in report["targets"]} and all("met" in t for t in report["targets"])
