"""The flow's look at its source's topic IDs from Spark's JVM answers as the librdkafka client does: the same IDs
in the same text, a missing topic left out, and a typed, retriable error from a cluster nobody answers
(geokafka.pipeline.jvm_look)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from kafka_util import closed_port, create_topic

from geokafka import errors
from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.jvm_look import JvmSourceLook

pytestmark = pytest.mark.integration


class NoFallback:
    """A fallback that must not be asked (the JVM answers in these tests) and spends no CPU of its own."""

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        raise AssertionError("the JVM did not answer")

    def background_cpu_s(self) -> float:
        return 0.0


def test_the_jvm_look_answers_as_the_librdkafka_client_does(spark: Any, east: ClusterConnection,
                                                             unique: Any) -> None:
    topics = [unique("look") for _ in range(12)]  # 12 random IDs: about half hold a '/' or a '+', where the two alphabets differ
    for topic in topics:
        create_topic(east, topic, partitions=2)
    librdkafka = ClusterAdmin(east, timeout_s=10.0)
    look = JvmSourceLook(spark, east, timeout_s=10.0, fallback=NoFallback())
    try:
        gone = unique("never-created")
        ids = look.topic_ids([*topics, gone])
        assert ids == librdkafka.topic_ids([*topics, gone]) and set(ids) == set(topics)
        assert look.background_cpu_s() > 0  # the JVM's own threads: what the topic-ID job's CPU budget counts
    finally:
        look.close()
        librdkafka.close()


def test_a_cluster_nobody_answers_is_a_retriable_error_within_the_looks_time_out(spark: Any,
                                                                                 east: ClusterConnection) -> None:
    nobody = dataclasses.replace(east, name="nowhere", bootstrap=f"127.0.0.1:{closed_port()}")
    look = JvmSourceLook(spark, nobody, timeout_s=1.0, fallback=NoFallback())
    try:
        started = time.monotonic()
        with pytest.raises(errors.GeokafkaError) as failed:
            look.topic_ids(["orders"])
        assert failed.value.retriable and failed.value.kafka_code == 7  # REQUEST_TIMED_OUT
        assert "cluster nowhere" in str(failed.value)
        assert time.monotonic() - started < 15  # the look's time-out, not a client's default minute
    finally:
        look.close()
