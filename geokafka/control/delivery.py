"""Waiting for a producer's acknowledgements without ``Producer.flush()``.

confluent-kafka 2.16's ``flush()`` raised a producer's fatal error (OUT_OF_ORDER_SEQUENCE_NUMBER
after an unclean leader election) as a bare ``KafkaError``, which is no exception class: no
``except`` clause catches it, so it passes every handler (seen in a clean-clone test run, where
it ended pytest with an INTERNALERROR). ``poll()`` raises the same error as a
:class:`~confluent_kafka.KafkaException`, which callers handle like any other.
"""

from __future__ import annotations

import time

from confluent_kafka import Producer

from geokafka.control.kafka_errors import classify


def drain(producer: Producer, timeout_s: float) -> int:
    """Serve delivery callbacks until nothing is queued or in flight, or ``timeout_s`` has passed;
    return how many messages are left. A fatal producer error is raised as a KafkaException."""
    deadline = time.monotonic() + timeout_s
    while len(producer):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        producer.poll(min(0.1, left))
    return len(producer)


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` carries a fatal client error: that producer can never be used again.

    A producer already in its fatal state refuses ``produce()`` with the code ``_FATAL`` and no fatal
    flag (the fatal error itself went to the log, or to a poll that came later)."""
    return classify(exc).fatal
