"""The flow's looks at its clusters from Spark's JVM (geokafka.pipeline.jvm_look), through fakes of the py4j objects:
their request and answer text (topic IDs, topic configs), their typed failures, their fallback when the JVM does not
answer, and the runner handing them to the topic-ID watch and the config sync once Spark runs. The real JVM side is tested in
tests/integration/test_cluster_look.py."""

from __future__ import annotations

from typing import Any

import pytest
from test_flow_runner import Harness

from geokafka import errors
from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.jvm_look import JvmClusterLook

EAST = ClusterConnection("east", "127.0.0.1:1", {"security.protocol": "plaintext"})


class JavaFailure(Exception):
    """What py4j raises for an exception the JVM threw: it carries the Java exception."""

    def __init__(self, java_exception: Any) -> None:
        super().__init__("An error occurred while calling o42.topicIds")
        self.java_exception = java_exception


class FakeJavaException:
    def __init__(self, text: str) -> None:
        self.text = text

    def toString(self) -> str:
        return self.text

    def getCause(self) -> None:
        return None


class FakeJavaLook:
    """``io.geokafka.spark.ClusterLook`` as py4j shows it: each call answers ``ids`` or ``configs``, or raises
    ``fail``."""

    def __init__(self, config: dict[str, str]) -> None:
        self.config = config
        self.id_requests: list[tuple[str, int]] = []
        self.config_requests: list[tuple[str, int]] = []
        self.ids = ""
        self.configs = ""
        self.fail: BaseException | None = None
        self.closed = False

    def topicIds(self, topics: str, timeout_ms: int) -> str:
        self.id_requests.append((topics, timeout_ms))
        if self.fail is not None:
            raise self.fail
        return self.ids

    def topicConfigs(self, topics: str, timeout_ms: int) -> str:
        self.config_requests.append((topics, timeout_ms))
        if self.fail is not None:
            raise self.fail
        return self.configs

    def cpuSeconds(self) -> float:
        return 0.25

    def close(self) -> None:
        self.closed = True


class FakeJvm:
    """``spark.sparkContext._jvm``: the look's class, the sink registry's typed failure, no Kafka classes."""

    def __init__(self) -> None:
        self.looks: list[FakeJavaLook] = []
        self.typed: dict[str, Any] | None = None
        outer = self

        class Spark:
            @staticmethod
            def ClusterLook(config: dict[str, str]) -> Any:
                look = FakeJavaLook(config)
                outer.looks.append(look)
                return look

            class SinkRegistry:
                @staticmethod
                def typedFailure(java_exception: Any) -> dict[str, Any] | None:
                    return outer.typed

        class Java:
            class lang:
                class Class:
                    @staticmethod
                    def forName(name: str) -> Any:
                        raise RuntimeError(f"no class {name} here")

        self.io = type("io", (), {"geokafka": type("geokafka", (), {"spark": Spark})})
        self.java = Java


class FakeSpark:
    def __init__(self) -> None:
        self.sparkContext = type("SparkContext", (), {"_jvm": FakeJvm()})()

    @property
    def jvm(self) -> FakeJvm:
        return self.sparkContext._jvm  # type: ignore[no-any-return]


class Fallback:
    """The librdkafka client's answers, counted."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        self.calls.append("topic_ids")
        return {t: "from-librdkafka" for t in topics}

    def many_topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        self.calls.append("many_topic_configs")
        return {t: {"from": "librdkafka"} for t in topics}

    def background_cpu_s(self) -> float:
        return 0.5


def test_a_look_asks_each_topic_once_and_answers_in_the_librdkafka_clients_text() -> None:
    spark, fallback = FakeSpark(), Fallback()
    look = JvmClusterLook(spark, EAST, timeout_s=2.0, fallback=fallback)
    java = spark.jvm.looks[0]
    assert java.config == EAST.java_client()
    java.ids = "events\tAAAAAAAAAAAAAAAAAAAAAA\norders\t1W/EpcgZQcOd7H0UywW38g\n"
    assert look.topic_ids(["orders", "events", "orders", "gone"]) == {
        "orders": "1W/EpcgZQcOd7H0UywW38g", "events": "AAAAAAAAAAAAAAAAAAAAAA"}
    assert java.id_requests == [("events\ngone\norders", 2000)]
    assert look.topic_ids([]) == {} and len(java.id_requests) == 1  # nothing asked, nothing sent
    assert fallback.calls == []
    assert look.background_cpu_s() == 0.75  # the JVM's answering threads and the fallback's background thread
    look.close()
    look.close()
    assert java.closed and look.background_cpu_s() == 0.5


def test_topic_configs_come_back_as_the_librdkafka_client_reads_them_each_value_unescaped() -> None:
    spark, fallback = FakeSpark(), Fallback()
    look = JvmClusterLook(spark, EAST, timeout_s=1.0, fallback=fallback, configs_timeout_s=30.0)
    java = spark.jvm.looks[0]
    # ClusterLook.configText's text (its JUnit test writes the same escapes)
    java.configs = "events\norders\n\tretention.ms\t86400000\n\todd\ta\\tb\\nc\\\\d\n"
    assert look.many_topic_configs(["orders", "events", "orders"]) == {
        "events": {}, "orders": {"retention.ms": "86400000", "odd": "a\tb\nc\\d"}}
    assert java.config_requests == [("events\norders", 30_000)]  # each topic once, within the configs' time-out
    assert look.many_topic_configs([]) == {} and len(java.config_requests) == 1
    spark.jvm.typed = {"kind": "KAFKA", "kafka_code": 3, "retriable": True, "message": "describing configs of gone"}
    java.fail = JavaFailure(FakeJavaException("io.geokafka.spark.GeokafkaException: describing configs of gone"))
    with pytest.raises(errors.GeokafkaError) as missing:
        look.many_topic_configs(["gone"])
    assert missing.value.kafka_code == 3 and "cluster east: describing topic configs" in str(missing.value)
    java.fail = ConnectionRefusedError("py4j's gateway is gone")
    assert look.many_topic_configs(["orders"]) == {"orders": {"from": "librdkafka"}}
    assert fallback.calls == ["many_topic_configs"]


def test_a_failure_the_jvm_threw_is_the_typed_error_it_carries_and_a_missing_answer_asks_librdkafka() -> None:
    spark, fallback = FakeSpark(), Fallback()
    look = JvmClusterLook(spark, EAST, timeout_s=2.0, fallback=fallback)
    java = spark.jvm.looks[0]
    java.fail = JavaFailure(FakeJavaException("io.geokafka.spark.GeokafkaException: describing topic orders: Timeout"))
    spark.jvm.typed = {"kind": "KAFKA", "kafka_code": 7, "retriable": True, "message": "describing topic orders: timed out"}
    with pytest.raises(errors.KafkaOperationError) as timed_out:
        look.topic_ids(["orders"])
    assert timed_out.value.kafka_code == 7 and timed_out.value.retriable
    assert "cluster east" in str(timed_out.value) and "timed out" in str(timed_out.value)
    spark.jvm.typed = {"kind": "AUTH", "kafka_code": 29, "retriable": False, "message": "topic authorization failed"}
    with pytest.raises(errors.AuthError) as refused:
        look.topic_ids(["orders"])
    assert refused.value.kafka_code == 29 and not refused.value.retriable
    assert fallback.calls == []
    java.fail = ConnectionRefusedError("py4j's gateway is gone")  # no Java exception: the JVM did not answer
    assert look.topic_ids(["orders"]) == {"orders": "from-librdkafka"}
    assert fallback.calls == ["topic_ids"]


def test_the_runner_hands_the_watch_and_the_sync_the_looks_from_spark_and_closes_them_with_its_clients() -> None:
    h = Harness([None])
    h.admin.timeout_s = 2.0  # type: ignore[attr-defined]
    h.tick_for(1)
    spark = FakeSpark()
    h.runner.spark_started(spark, 0.5)  # type: ignore[arg-type]
    h.tick_for(1)
    assert len(spark.jvm.looks) == 2  # one at the source, one at the target
    java, at_target = spark.jvm.looks
    assert java.config == h.runner.source.java_client() and at_target.config == h.runner.target.java_client()
    java.ids = "orders\tid-1\n"
    h.tick_for(3)
    assert java.id_requests and all(request == ("orders", 2000) for request in java.id_requests)
    starts = len(h.queries)
    java.ids = "orders\tid-2\n"  # re-created under the running query: the watch sees it through the JVM
    h.tick_for(3)
    assert len(h.queries) > starts  # the runner restarted the query for the re-created topic
    h.runner.stop()
    assert java.closed and at_target.closed


def test_the_config_sync_reads_both_sides_through_the_looks_from_spark() -> None:
    h = Harness([None], sync=["configs"])
    h.admin.timeout_s = 2.0  # type: ignore[attr-defined]
    h.tick_for(1)
    spark = FakeSpark()
    h.runner.spark_started(spark, 0.5)  # type: ignore[arg-type]
    h.tick_for(1)
    at_source, at_target = spark.jvm.looks
    at_source.ids = "orders\tid-1\n"
    at_source.configs = "orders\n\tretention.ms\t1000\n"
    at_target.configs = "east.orders\n\tretention.ms\t1000\n\tmessage.timestamp.type\tCreateTime\n"
    h.tick_for(25)  # past two syncs (every sync_interval_s, 10 s)
    assert at_source.config_requests and all(r == ("orders", 2000) for r in at_source.config_requests)
    assert at_target.config_requests and all(r[0] == "east.orders" for r in at_target.config_requests)
    h.runner.stop()
