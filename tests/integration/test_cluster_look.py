"""The flow's looks at its clusters from Spark's JVM answer as the librdkafka client does: the same topic IDs in the
same text, a missing topic left out; the same topic configs, a missing topic a typed error; and a typed, retriable
error from a cluster nobody answers (geokafka.pipeline.jvm_look)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from kafka_util import closed_port, create_topic

from geokafka import errors
from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.jvm_look import JvmClusterLook

pytestmark = pytest.mark.integration


class NoFallback:
    """A fallback that must not be asked (the JVM answers in these tests) and spends no CPU of its own."""

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        raise AssertionError("the JVM did not answer")

    def many_topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        raise AssertionError("the JVM did not answer")

    def background_cpu_s(self) -> float:
        return 0.0


def test_the_jvm_look_answers_as_the_librdkafka_client_does(spark: Any, east: ClusterConnection,
                                                             unique: Any) -> None:
    topics = [unique("look") for _ in range(12)]  # 12 random IDs: about half hold a '/' or a '+', where the two alphabets differ
    for topic in topics:
        create_topic(east, topic, partitions=2)
    librdkafka = ClusterAdmin(east, timeout_s=10.0)
    look = JvmClusterLook(spark, east, timeout_s=10.0, fallback=NoFallback())
    try:
        gone = unique("never-created")
        ids = look.topic_ids([*topics, gone])
        assert ids == librdkafka.topic_ids([*topics, gone]) and set(ids) == set(topics)
        assert look.background_cpu_s() > 0  # the JVM's own threads: what the topic-ID job's CPU budget counts
    finally:
        look.close()
        librdkafka.close()


def test_the_jvm_looks_configs_are_the_librdkafka_clients(spark: Any, east: ClusterConnection, unique: Any) -> None:
    plain, tuned = unique("look-plain"), unique("look-tuned")
    create_topic(east, plain, partitions=1)
    create_topic(east, tuned, partitions=1, config={"retention.ms": "86400000", "cleanup.policy": "compact,delete",
                                                    "min.insync.replicas": "1"})
    librdkafka = ClusterAdmin(east, timeout_s=10.0)
    look = JvmClusterLook(spark, east, timeout_s=1.0, fallback=NoFallback(), configs_timeout_s=10.0)
    try:
        configs = look.many_topic_configs([plain, tuned])
        assert configs == librdkafka.many_topic_configs([plain, tuned])
        assert configs[plain] == {} and configs[tuned]["cleanup.policy"] == "compact,delete"
        with pytest.raises(errors.GeokafkaError) as missing:
            look.many_topic_configs([tuned, unique("never-created")])
        assert missing.value.kafka_code == 3  # UNKNOWN_TOPIC_OR_PARTITION, as the JVM typed it
    finally:
        look.close()
        librdkafka.close()


def test_a_cluster_nobody_answers_is_a_retriable_error_within_the_looks_time_out(spark: Any,
                                                                                 east: ClusterConnection) -> None:
    nobody = dataclasses.replace(east, name="nowhere", bootstrap=f"127.0.0.1:{closed_port()}")
    look = JvmClusterLook(spark, nobody, timeout_s=1.0, fallback=NoFallback())
    try:
        started = time.monotonic()
        with pytest.raises(errors.GeokafkaError) as failed:
            look.topic_ids(["orders"])
        assert failed.value.retriable and failed.value.kafka_code == 7  # REQUEST_TIMED_OUT
        assert "cluster nowhere" in str(failed.value)
        assert time.monotonic() - started < 15  # the look's time-out, not a client's default minute
    finally:
        look.close()
