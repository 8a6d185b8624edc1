"""Every Kafka error of the Python control plane classified once, from the error itself: its code and the flags
confluent-kafka sets on it (``fatal()``, ``retriable()``, ``txn_requires_abort()``), never its text.

The decision, in order:

* a **fatal** error (the client can never go on: a fenced idempotent producer) is not retriable;
* a code in :data:`PERMANENT` (the cluster refuses the request as it is: a config, a policy, a replication
  factor, a size) is not retriable: asking again gets the same answer, so the flow goes to ``error`` with the
  code and a hint (:data:`HINTS`) and a person changes something;
* every other code is retriable: leaders moving, a coordinator loading, a broker away, a time-out,
  and codes not known to be permanent ("try again later"; the code is kept, so the status shows it);
  ``txn_requires_abort()`` marks it abortable.

A client library builds ``KafkaError`` objects without the retriable flag for its own local errors (a time-out
reads ``retriable() == False``), which is why only the codes of :data:`PERMANENT` and the fatal flag stop.
``tests/unit/test_kafka_errors.py`` is the table test; the Java side has its own (``KafkaErrors`` in ``jvm/``).
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException

PERMANENT = frozenset({
    KafkaError.INVALID_CONFIG, KafkaError.POLICY_VIOLATION, KafkaError.INVALID_REPLICATION_FACTOR,
    KafkaError.INVALID_PARTITIONS, KafkaError.INVALID_REPLICA_ASSIGNMENT, KafkaError.TOPIC_EXCEPTION,
    KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST, KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.RECORD_LIST_TOO_LARGE, KafkaError.INVALID_TRANSACTION_TIMEOUT, KafkaError.UNSUPPORTED_COMPRESSION_TYPE,
    KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT, KafkaError.TOPIC_DELETION_DISABLED, KafkaError.INVALID_RECORD,
    KafkaError.INVALID_REQUIRED_ACKS, KafkaError.INVALID_GROUP_ID, KafkaError._INVALID_ARG,
    KafkaError._UNSUPPORTED_FEATURE, KafkaError._NOT_IMPLEMENTED, KafkaError._INVALID_TYPE,
})
"""Codes the cluster answers the same way however often it is asked."""

HINTS: dict[int, str] = {
    KafkaError.INVALID_CONFIG: "the cluster refuses a topic config: leave it out (flows.<flow>.config_exclude) or "
                               "fix it at the source",
    KafkaError.POLICY_VIOLATION: "the cluster's create-topic policy refuses the topic as asked: create it by hand, "
                                 "or have the policy changed",
    KafkaError.INVALID_REPLICATION_FACTOR: "the cluster has fewer brokers than the replication factor asked for",
    KafkaError.INVALID_PARTITIONS: "the partition count asked for is not valid on this cluster",
    KafkaError.MSG_SIZE_TOO_LARGE: "a record is larger than the cluster accepts (max.message.bytes)",
    KafkaError.UNSUPPORTED_VERSION: "the broker is too old for this request",
}
"""What a person can do about a permanent code."""


@dataclass(frozen=True)
class Classified:
    """What an error is, for whoever decides to retry or stop."""

    code: int | None
    """The Kafka (or librdkafka) error code; None for a future's time-out."""
    name: str
    retriable: bool
    fatal: bool = False
    abortable: bool = False
    """The transaction must be aborted, then the work can be tried again."""

    @property
    def hint(self) -> str | None:
        """What to do, for a permanent code that has one."""
        return None if self.code is None else HINTS.get(self.code)


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` a confluent-kafka exception carries, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def classify(exc: BaseException) -> Classified:
    """The classification of a confluent-kafka exception or a future's time-out (see module doc)."""
    if isinstance(exc, (FutureTimeout, TimeoutError)):
        return Classified(None, "TIMED_OUT", retriable=True)
    err = kafka_error_of(exc)
    if err is None:
        return Classified(None, type(exc).__name__, retriable=True)
    return classify_error(err)


def classify_error(err: KafkaError) -> Classified:
    """The classification of one ``KafkaError`` (see module doc)."""
    code = err.code()
    name = err.name()
    # a producer already in its fatal state refuses produce() with _FATAL and no fatal flag (the fatal error itself
    # went to the log, or to a later poll)
    if err.fatal() or code == KafkaError._FATAL:
        return Classified(code, name, retriable=False, fatal=True)
    if code in PERMANENT:
        return Classified(code, name, retriable=False)
    abortable = bool(err.txn_requires_abort())
    return Classified(code, name, retriable=True, abortable=abortable)
