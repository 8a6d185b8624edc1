"""A mirror's normal life is told in geokafka's words: a query restarted (a topic joined the selection) and a
clean stop (SIGTERM to geokafka, or to every process of the service as systemd sends it) write no ERROR line and
no stack trace of Spark or Kafka into geokafka's info log, where Spark's stderr goes (``spark: ...`` lines).
What the stops' cancelled tasks write is still there at debug level."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest
import yaml
from kafka_util import create_topic, numbered_records, produce
from pipeline_util import GEOKAFKA, wait_for_line, with_flows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


_SPARK_ERROR = re.compile(r"^\S+ (?P<level>[A-Z]+) spark: (\d\d:\d\d:\d\d )?(ERROR|FATAL) ")
_TRACE = re.compile(r"^\S+ (?P<level>[A-Z]+) spark: (\s+at |Caused by: |\S+(Exception|Error)(: |$))")


def spark_errors(log: str, level: str) -> list[str]:
    """The lines of ``log`` geokafka logged at ``level`` that are Spark's or Kafka's ERROR lines or part of a
    stack trace."""
    return [line for line in log.splitlines()
            if (m := _SPARK_ERROR.search(line) or _TRACE.search(line)) and m["level"] == level]


def test_the_patterns_find_what_spark_wrote_on_a_stop() -> None:
    """The premise: the lines a restart wrote into the info log before geokafka told them apart are found."""
    seen = ("12:00:01 INFO spark: 12:00:01 ERROR MicroBatchExecution: Query q [id = 1] terminated with error\n"
            "12:00:01 INFO spark: java.lang.InterruptedException: sleep interrupted\n"
            "12:00:01 INFO spark: \tat java.base/java.lang.Thread.sleep(Native Method)\n"
            "12:00:01 INFO spark: Caused by: org.apache.kafka.common.errors.InterruptException\n"
            "12:00:01 INFO flow f: running, 40 records\n"
            "12:00:01 DEBUG spark: 12:00:01 ERROR Utils: Aborting task\n"
            "12:00:01 INFO spark: 12:00:01 WARN TaskSetManager: Lost task 0.0\n")
    assert len(spark_errors(seen, "INFO")) == 4 and len(spark_errors(seen, "DEBUG")) == 1


@pytest.mark.parametrize("every_process", [False, True], ids=["sigterm", "sigterm-to-every-process"])
def test_a_restart_and_a_clean_stop_write_no_spark_error_or_stack_trace(base_topology, east, west, unique, tmp_path,
                                                                          every_process) -> None:
    prefix = unique("quiet")
    create_topic(east, f"{prefix}-a", partitions=2, rf=3)
    produce(east, f"{prefix}-a", numbered_records(40, 2))
    topology = with_flows(base_topology, **{prefix: {"source": "east", "target": "west", "topics": [f"{prefix}-.*"]}})
    data = topology.model_dump(mode="json", exclude_defaults=True)
    data.setdefault("pipeline", {})["topic_refresh_s"] = 1
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(data))
    log = tmp_path / "mirror.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(GEOKAFKA), "--log-level", "debug", "-f", str(path), "mirror", prefix], stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for_line(proc, log, f"flow {prefix}: running, 40 records")
        create_topic(east, f"{prefix}-b", partitions=2, rf=3)
        wait_for_line(proc, log, f"flow {prefix}: topic selection changed, restarting its query")
        wait_for_line(proc, log, f"flow {prefix}: running, 40 records, 0.0 MB, 4 partitions, 1 restarts")
        # produced once the mirror replicates the new topic: every broker knows it by then
        produce(east, f"{prefix}-b", numbered_records(40, 2, start=40))
        wait_for_line(proc, log, f"flow {prefix}: running, 80 records")
        restarted = log.read_text()
        if every_process:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert f"flow {prefix}: stopped, 80 records" in text[text.rindex("mirror stopped"):], text[-2000:]
    # the premise: the restart cancelled the query's tasks, and what they wrote is in the log, at debug level
    assert any("ERROR Utils: Aborting task" in line for line in spark_errors(restarted, "DEBUG")), restarted[-3000:]
    assert spark_errors(text, "INFO") == [], "\n".join(spark_errors(text, "INFO")[:60])
    assert spark_errors(text, "WARNING") == [] and spark_errors(text, "ERROR") == []
    assert "Traceback" not in text
