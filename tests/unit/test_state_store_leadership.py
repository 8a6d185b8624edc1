"""A state read that meets a partition whose leadership is moving (a state topic just created, a broker restarted)
asks again with fresh clients within its time-out; any other error is raised at once. The network half is the
store's own; here its catch-up is replaced to count the attempts."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import KafkaStateStore
from geokafka.errors import KafkaOperationError


class Flaky(KafkaStateStore):
    def __init__(self, failures: list[KafkaOperationError]) -> None:
        super().__init__(ClusterConnection("west", "127.0.0.1:1", {}))
        self.failures, self.attempts = failures, 0

    def _catch_up(self, timeout_s: float) -> None:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)


def moved(code: int) -> KafkaOperationError:
    return KafkaOperationError("cluster west: reading __geokafka_state: Broker: Not leader for partition",
                               kafka_code=code)


def test_a_read_that_meets_moving_leadership_asks_again() -> None:
    store = Flaky([moved(KafkaError.NOT_LEADER_FOR_PARTITION), moved(KafkaError.LEADER_NOT_AVAILABLE)])
    store.read(timeout_s=5)
    assert store.attempts == 3


def test_another_error_is_raised_at_once_and_a_lasting_move_within_the_time_out() -> None:
    refused = KafkaOperationError("cluster west: reading __geokafka_state: Broker: Request timed out", kafka_code=7)
    store = Flaky([refused])
    with pytest.raises(KafkaOperationError) as raised:
        store.read(timeout_s=5)
    assert raised.value is refused and store.attempts == 1
    lasting = Flaky([moved(KafkaError.FENCED_LEADER_EPOCH) for _ in range(100)])
    with pytest.raises(KafkaOperationError):
        lasting.read(timeout_s=1)
    assert 2 <= lasting.attempts <= 6  # every 0.2 s for the read's second, no longer
