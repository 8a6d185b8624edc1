"""The shipped Prometheus alert rules load, name only metrics /metrics serves, and fire as documented.

promtool comes from Debian's pinned prometheus package (``./run`` unpacks the binary and sets
GEOKAFKA_PROMTOOL); it checks the rules' syntax and runs their unit tests
(``tests/unit/geokafka-alerts.test.yml``) on synthetic series.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, Throughput

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "docs" / "operations" / "geokafka-alerts.yml"
RULE_TESTS = Path(__file__).with_name("geokafka-alerts.test.yml")


def exposed_samples() -> set[str]:
    """Every sample name /metrics can serve: a report with a flow, a partition and the guard."""
    from geokafka.guard.summary import GuardStatus

    flow = FlowStatus("f", "a", "b", "running", "running", heartbeat_age_s=1.0, written=1, bytes=1,
                      partitions=[PartitionStatus("t", 0, "a.t", 5, 4, 1, 1.0, lost_records=1)], rpo=Rpo(1, 1.0, "live"),
                      throughput=Throughput(1.0, 1.0, 1.0, 1.0, "x"))
    guard = GuardStatus("c", lowered=[{"topic": "t", "dc": "d", "original": 3, "lowered": 2, "at_ms": 0}],
                        actions={"lower-min-isr/done": 1})
    text = render_metrics(StatusReport(0, [flow], guard))
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def rules() -> list[dict[str, object]]:
    data = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def test_every_rule_is_an_alert_with_a_severity_and_a_summary() -> None:
    loaded = rules()
    assert len(loaded) >= 10
    names = [str(rule["alert"]) for rule in loaded]
    assert len(names) == len(set(names))
    for rule in loaded:
        assert isinstance(rule["labels"], dict) and rule["labels"]["severity"] in ("page", "warning", "info"), rule
        assert isinstance(rule["annotations"], dict) and rule["annotations"]["summary"], rule


def test_every_metric_the_rules_name_is_served() -> None:
    named = {name for rule in rules() for name in re.findall(r"geokafka_[a-z_]+", str(rule["expr"]))}
    served = exposed_samples()
    assert named and named <= served, f"the rules name metrics /metrics does not serve: {sorted(named - served)}"


def test_the_metrics_page_lists_every_alert() -> None:
    page = (REPO / "docs" / "operations" / "metrics.md").read_text(encoding="utf-8")
    for rule in rules():
        assert f"| `{rule['alert']}` |" in page, f"docs/operations/metrics.md does not list {rule['alert']}"


def _promtool() -> str:
    found = os.environ.get("GEOKAFKA_PROMTOOL") or shutil.which("promtool")
    assert found and Path(found).exists(), "promtool not found: run the tests with ./run, which installs it"
    return found


def test_promtool_checks_the_rules() -> None:
    done = subprocess.run([_promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_the_rules_fire_on_their_unit_tests() -> None:
    done = subprocess.run([_promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True,
                          check=False, cwd=RULE_TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
