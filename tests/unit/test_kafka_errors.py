"""The control plane's one error classifier, as a table: per Kafka error (its code and flags), retriable or not,
fatal, abortable; and what `raise_mapped` makes of it (the geokafka error a flow decides on)."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from confluent_kafka import KafkaError, KafkaException

from geokafka.control.admin import raise_mapped
from geokafka.control.connection import ClusterConnection
from geokafka.control.delivery import is_fatal
from geokafka.control.kafka_errors import classify
from geokafka.errors import AuthError, ClusterUnreachableError, KafkaOperationError, MissingTopicError

K = KafkaError
# code, flags (fatal, retriable, txn_requires_abort), retriable, fatal, abortable
TABLE = [
    (K.INVALID_CONFIG, {}, False, False, False),
    (K.POLICY_VIOLATION, {}, False, False, False),
    (K.INVALID_REPLICATION_FACTOR, {}, False, False, False),
    (K.INVALID_PARTITIONS, {}, False, False, False),
    (K.MSG_SIZE_TOO_LARGE, {}, False, False, False),
    (K.UNSUPPORTED_VERSION, {}, False, False, False),
    (K.INVALID_CONFIG, {"retriable": True}, False, False, False),  # a permanent code stays permanent
    (K._FATAL, {}, False, True, False),  # a producer already in its fatal state
    (K.PRODUCER_FENCED, {"fatal": True}, False, True, False),
    (K.OUT_OF_ORDER_SEQUENCE_NUMBER, {"fatal": True}, False, True, False),
    (K._TIMED_OUT, {}, True, False, False),  # librdkafka's own time-outs carry no retriable flag
    (K.REQUEST_TIMED_OUT, {}, True, False, False),
    (K._TRANSPORT, {}, True, False, False),
    (K._ALL_BROKERS_DOWN, {}, True, False, False),
    (K.NOT_LEADER_FOR_PARTITION, {}, True, False, False),
    (K.LEADER_NOT_AVAILABLE, {}, True, False, False),
    (K.NOT_ENOUGH_REPLICAS, {}, True, False, False),
    (K.COORDINATOR_LOAD_IN_PROGRESS, {}, True, False, False),
    (K.CONCURRENT_TRANSACTIONS, {}, True, False, False),
    (K.INVALID_PRODUCER_EPOCH, {"txn_requires_abort": True}, True, False, True),
    (K._MSG_TIMED_OUT, {"txn_requires_abort": True}, True, False, True),
    (K.UNKNOWN_TOPIC_ID, {}, True, False, False),  # not known to be permanent: tried again, its code kept
]


@pytest.mark.parametrize(("code", "flags", "retriable", "fatal", "abortable"), TABLE,
                         ids=[f"{KafkaError(row[0]).name()}{'+' + '+'.join(row[1]) if row[1] else ''}" for row in TABLE])
def test_every_error_is_classified_from_its_code_and_flags(code, flags, retriable, fatal, abortable) -> None:
    err = KafkaError(code, "text that is never read", **flags)
    got = classify(KafkaException(err))
    assert (got.code, got.retriable, got.fatal, got.abortable) == (code, retriable, fatal, abortable)
    assert is_fatal(KafkaException(err)) is fatal


def test_a_future_time_out_is_retriable() -> None:
    assert classify(FutureTimeout()).retriable


CONN = ClusterConnection("atl", "127.0.0.1:1", {})


@pytest.mark.parametrize(("code", "kind", "retriable"), [
    (K.INVALID_CONFIG, KafkaOperationError, False),
    (K.POLICY_VIOLATION, KafkaOperationError, False),
    (K.INVALID_REPLICATION_FACTOR, KafkaOperationError, False),
    (K.NOT_LEADER_FOR_PARTITION, KafkaOperationError, True),
    (K.UNKNOWN_TOPIC_ID, KafkaOperationError, True),
    (K._TRANSPORT, ClusterUnreachableError, True),
    (K.TOPIC_AUTHORIZATION_FAILED, AuthError, False),
    (K.UNKNOWN_TOPIC_OR_PART, MissingTopicError, False),
])
def test_raise_mapped_makes_the_geokafka_error_a_flow_decides_on(code, kind, retriable) -> None:
    with pytest.raises(kind) as raised:
        raise_mapped(CONN, "creating topic atl.orders", KafkaException(KafkaError(code, "refused")))
    assert raised.value.retriable is retriable
    assert raised.value.kafka_code == code
    if code == K.INVALID_CONFIG:
        assert "not retriable" in str(raised.value) and "config_exclude" in str(raised.value)
