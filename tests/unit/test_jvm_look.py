"""The flow's look at its source's topic IDs from Spark's JVM (geokafka.pipeline.jvm_look), through fakes of the
py4j objects: its request and answer text, its typed failures, its fallback when the JVM does not answer, and the
runner handing it to the topic-ID watch once Spark runs. The real JVM side is tested in
tests/integration/test_source_look.py."""

from __future__ import annotations

from typing import Any

import pytest
from test_flow_runner import Harness

from geokafka import errors
from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.jvm_look import JvmSourceLook

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
    """``io.geokafka.spark.SourceLook`` as py4j shows it: each call answers ``ids`` or raises ``fail``."""

    def __init__(self, config: dict[str, str]) -> None:
        self.config = config
        self.id_requests: list[tuple[str, int]] = []
        self.ids = ""
        self.fail: BaseException | None = None
        self.closed = False

    def topicIds(self, topics: str, timeout_ms: int) -> str:
        self.id_requests.append((topics, timeout_ms))
        if self.fail is not None:
            raise self.fail
        return self.ids

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
            def SourceLook(config: dict[str, str]) -> Any:
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

    def background_cpu_s(self) -> float:
        return 0.5


def test_a_look_asks_each_topic_once_and_answers_in_the_librdkafka_clients_text() -> None:
    spark, fallback = FakeSpark(), Fallback()
    look = JvmSourceLook(spark, EAST, timeout_s=2.0, fallback=fallback)
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


def test_a_failure_the_jvm_threw_is_the_typed_error_it_carries_and_a_missing_answer_asks_librdkafka() -> None:
    spark, fallback = FakeSpark(), Fallback()
    look = JvmSourceLook(spark, EAST, timeout_s=2.0, fallback=fallback)
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


def test_the_runner_hands_the_topic_id_watch_the_look_from_spark_and_closes_it_with_its_clients() -> None:
    h = Harness([None])
    h.admin.timeout_s = 2.0  # type: ignore[attr-defined]
    h.tick_for(1)
    spark = FakeSpark()
    h.runner.spark_started(spark, 0.5)  # type: ignore[arg-type]
    h.tick_for(1)
    assert len(spark.jvm.looks) == 1
    java = spark.jvm.looks[0]
    java.ids = "orders\tid-1\n"
    h.tick_for(3)
    assert java.id_requests and all(request == ("orders", 2000) for request in java.id_requests)
    starts = len(h.queries)
    java.ids = "orders\tid-2\n"  # re-created under the running query: the watch sees it through the JVM
    h.tick_for(3)
    assert len(h.queries) > starts  # the runner restarted the query for the re-created topic
    h.runner.stop()
    assert java.closed
