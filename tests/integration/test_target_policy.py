"""A target cluster whose create-topic policy refuses a flow's target topic, as a platform team's policy plugin does:
the refusal (POLICY_VIOLATION) is that flow's ``error``, with the code and what to do, said once; the flow beside it,
on another target, runs. The policy is a real broker plugin, compiled here against the broker's own jars.

(INVALID_CONFIG itself, the other refusal the status page names, cannot be provoked between two brokers of one
version: they accept the same topic configs, and geokafka leaves out the ones that depend on a broker's setup.
``tests/unit/test_kafka_errors.py`` classifies both codes with one rule.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_util import one_more_cluster
from kafka_util import create_topic, numbered_records, port_base, produce
from pipeline_util import mirror_command, wait_for, with_flows

from geokafka.artifacts.jars import kafka_classpath
from geokafka.errors import KafkaOperationError
from geokafka.infra.local_cluster import LOCAL_CLASSPATH_ENV
from geokafka.topology import Topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

POLICY = """\
package geokafkatest;

import java.util.Map;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/** Topics keep their records a day at least. */
public class MinimumRetentionPolicy implements CreateTopicPolicy {
    @Override public void configure(Map<String, ?> configs) {}

    @Override public void validate(RequestMetadata request) throws PolicyViolationException {
        String retention = request.configs().get("retention.ms");
        if (retention != null && Long.parseLong(retention) >= 0 && Long.parseLong(retention) < 86_400_000L) {
            throw new PolicyViolationException("topic " + request.topic() + ": retention.ms " + retention
                + " is below this cluster's minimum of one day");
        }
    }

    @Override public void close() {}
}
"""


@pytest.fixture(scope="module")
def with_policed(base_topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    """The session's clusters and ``policed``, a cluster of this module's own whose brokers run the policy above."""
    build = tmp_path_factory.mktemp("policy")
    source = build / "geokafkatest" / "MinimumRetentionPolicy.java"
    source.parent.mkdir()
    source.write_text(POLICY)
    subprocess.run(["javac", "-cp", kafka_classpath(), "-d", str(build / "classes"), str(source)], check=True,
                   capture_output=True, timeout=120)
    os.environ[LOCAL_CLASSPATH_ENV] = str(build / "classes")
    try:
        with one_more_cluster(base_topology, "policed", port_base() + 9092, {
                "create.topic.policy.class.name": "geokafkatest.MinimumRetentionPolicy"}) as topology:
            os.environ.pop(LOCAL_CLASSPATH_ENV, None)
            yield topology
    finally:
        os.environ.pop(LOCAL_CLASSPATH_ENV, None)


def test_a_target_topic_the_clusters_policy_refuses_is_its_flows_error_and_the_other_flow_runs(
        with_policed: Topology, east, unique, tmp_path: Path) -> None:
    good, refused = unique("beside"), unique("policed")
    create_topic(east, good, partitions=2, rf=3)
    create_topic(east, refused, partitions=2, rf=3, config={"retention.ms": "3600000"})
    for topic in (good, refused):
        produce(east, topic, numbered_records(40, 2))
    topology = with_flows(with_policed, **{good: {"source": "east", "target": "west", "topics": [good]},
                                           refused: {"source": "east", "target": "policed", "topics": [refused]}})
    with mirror_command(topology, [good, refused], tmp_path) as mirror:
        wait_for(lambda: f"flow {good}: running, 40 records" in mirror.text() or mirror.proc.poll() is not None, 240,
                 "the flow beside it replicating")
        wait_for(lambda: f"flow {refused}: error" in mirror.text() or mirror.proc.poll() is not None, 120,
                 "the refused flow's error")
        assert mirror.proc.poll() is None, mirror.text()[-3000:]
        status = mirror.status()
        mirror.proc.send_signal(signal.SIGTERM)
        mirror.proc.wait(60)
    proc, text = mirror.proc, mirror.text()
    flows = {f["name"]: f for f in json.loads(status.stdout)["flows"]}
    reason = flows[refused]["reason"]
    assert flows[refused]["state"] == "error" and "POLICY_VIOLATION" in reason and "not retriable" in reason, reason
    assert "below this cluster's minimum of one day" in reason and "create-topic policy" in reason, reason
    assert flows[good]["state"] == "running", status.stdout
    assert f"flow {refused}: retrying" not in text and "Traceback" not in text, text[-3000:]
    assert proc.returncode == KafkaOperationError.exit_code, text[-3000:]  # stopped with a flow in error
