"""control.delivery: waiting for acks without flush(), and telling a fatal client error apart."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException, Producer

from geokafka.control.delivery import drain, is_fatal


def test_drain_returns_at_once_when_nothing_is_outstanding() -> None:
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    started = time.monotonic()
    assert drain(producer, 5.0) == 0
    assert time.monotonic() - started < 1.0


def test_drain_gives_up_after_its_timeout_and_says_how_many_are_left() -> None:
    # port 1 answers nobody: the records stay queued
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0, "message.timeout.ms": 60_000})
    for i in range(3):
        producer.produce("t", value=str(i).encode())
    assert drain(producer, 0.3) == 3
    producer.purge(in_queue=True, in_flight=True)
    assert drain(producer, 1.0) == 0


def test_only_fatal_client_errors_are_fatal() -> None:
    fatal = KafkaException(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "desync", fatal=True))
    assert is_fatal(fatal)
    # what produce() raises once the producer is in its fatal state (seen in the 2-DC drill's recovery)
    assert is_fatal(KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error")))
    assert not is_fatal(KafkaException(KafkaError(KafkaError._TIMED_OUT, "slow")))
    assert not is_fatal(RuntimeError("not a Kafka error"))
