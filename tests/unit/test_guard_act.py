"""The guard's actions against a cluster nobody answers: a geokafka error naming the action, never a library crash."""

from __future__ import annotations

import socket

import pytest

from geokafka.control.connection import ClusterConnection
from geokafka.errors import GeokafkaError
from geokafka.guard.act import ClusterActor
from geokafka.guard.model import Action, ActionKind, ClusterView, PartitionView


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("kind", ["lower-min-isr", "restore-min-isr", "elect-preferred-leaders"])
def test_an_unanswered_action_is_a_geokafka_error(kind: ActionKind) -> None:
    conn = ClusterConnection(name="gone", bootstrap=f"127.0.0.1:{_dead_port()}", security={})
    actor = ClusterActor(conn, timeout_s=1.0)
    view = ClusterView(0, 0, frozenset({1, 2}), frozenset({1, 2}),
                       (PartitionView("orders", 0, (1, 2), (2,), 2),), {"orders": 2})
    action = Action(kind, "orders", "dc1", None if kind == "elect-preferred-leaders" else 2, 3, "test")
    with pytest.raises(GeokafkaError) as caught:
        actor.apply(action, view)
    assert f"{kind} on orders" in str(caught.value)
