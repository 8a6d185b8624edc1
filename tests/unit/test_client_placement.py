"""Where a flow's applications belong, from its role record alone (pure), and when a consumer switches."""

from __future__ import annotations

import json

import pytest
from client_fakes import FLOW, topology

from geokafka.client.placement import Placement, placement_of
from geokafka.client.switch import Step, Switch, consumer_step
from geokafka.client.where import plain_names, where
from geokafka.control.state_records import Progress, Role
from geokafka.control.state_store import InMemoryStateStore

FAILOVER_STARTED = Role(FLOW, Role.FAILED_OVER, 5_000, {"kind": "failover"})
FAILOVER_DONE = Role(FLOW, Role.FAILED_OVER, 6_000, {"kind": "failover", "rpo": {"records_lower": 0}})
PROMOTED = Role(FLOW, Role.FAILED_OVER, 6_000, {"kind": "promote", "rpo": {"records_lower": 0}})
FAILED_BACK = Role(FLOW, Role.ACTIVE, 9_000, {"failed_back_to": "nyc"})


@pytest.mark.parametrize(("rename", "role", "cluster", "consume", "settled", "kind"), [
    ("prefix", None, "nyc", ["orders"], True, None),
    ("prefix", Role(FLOW, Role.ACTIVE, 1, {}), "nyc", ["orders"], True, None),
    ("prefix", FAILOVER_STARTED, "atl", ["nyc.orders", "orders"], False, "failover"),
    ("prefix", FAILOVER_DONE, "atl", ["nyc.orders", "orders"], True, "failover"),
    ("prefix", PROMOTED, "atl", ["nyc.orders", "orders"], True, "promote"),
    ("prefix", FAILED_BACK, "nyc", ["orders", "atl.orders"], True, "failback"),
    ("identity", None, "nyc", ["orders"], True, None),
    ("identity", FAILOVER_DONE, "atl", ["orders"], True, "failover"),
    ("identity", FAILED_BACK, "nyc", ["orders"], True, "failback"),
], ids=lambda v: v.role + f"@{v.at_ms}" if isinstance(v, Role) else str(v))
def test_the_role_record_says_where_to_consume_and_produce(rename, role, cluster, consume, settled, kind) -> None:
    topo = topology(rename)
    placement = placement_of(FLOW, topo.flows[FLOW], role)
    assert placement.cluster == cluster
    assert placement.consumer_topics(["orders"]) == consume
    assert placement.producer_topic("orders") == "orders"  # the topic's own name, never a replica's
    assert (placement.settled, placement.kind) == (settled, kind)


def test_the_settling_of_a_failover_is_not_a_move_of_its_site() -> None:
    spec = topology().flows[FLOW]
    started, done = placement_of(FLOW, spec, FAILOVER_STARTED), placement_of(FLOW, spec, FAILOVER_DONE)
    assert started.site_key == done.site_key
    assert placement_of(FLOW, spec, None).site_key != started.site_key
    assert placement_of(FLOW, spec, FAILED_BACK).site_key != placement_of(FLOW, spec, None).site_key


def test_topics_of_several_are_named_once_each_in_order() -> None:
    placement = placement_of(FLOW, topology().flows[FLOW], FAILOVER_DONE)
    assert placement.consumer_topics(["orders", "payments", "orders"]) == [
        "nyc.orders", "orders", "nyc.payments", "payments"]


def test_a_custom_separator_names_the_replica() -> None:
    topo = topology()
    spec = topo.flows[FLOW].model_copy(update={"separator": "_"})
    assert placement_of(FLOW, spec, FAILOVER_DONE).consumer_topics(["orders"]) == ["nyc_orders", "orders"]


def at(spec_role: Role | None) -> Placement:
    return placement_of(FLOW, topology().flows[FLOW], spec_role)


@pytest.mark.parametrize(("current", "observed", "waited", "step"), [
    (at(None), at(None), 0, Step.STAY),
    (at(None), at(FAILOVER_STARTED), 0, Step.WAIT),
    (at(None), at(FAILOVER_STARTED), 119.9, Step.WAIT),
    (at(None), at(FAILOVER_STARTED), 120, Step.SWITCH),  # the failover died half-way: go without its offsets
    (at(None), at(FAILOVER_DONE), 0, Step.SWITCH),
    (at(FAILOVER_DONE), at(FAILOVER_DONE), 0, Step.STAY),
    (at(FAILOVER_DONE), at(FAILED_BACK), 0, Step.SWITCH),
    (None, at(FAILOVER_STARTED), 0, Step.WAIT),  # started while a failover moves the groups: nowhere yet
    (None, at(None), 0, Step.SWITCH),
])
def test_a_consumer_waits_for_the_failover_to_move_its_group_then_switches(current, observed, waited, step) -> None:
    assert consumer_step(current, observed, 1000.0, 1000.0 + waited, settle_timeout_s=120) is step


def test_a_switch_says_in_one_line_where_and_from_which_offsets() -> None:
    moved = Switch(FLOW, "consumer billing", "nyc", "atl", at(FAILOVER_DONE), ("nyc.orders", "orders"), 1.24)
    text = moved.describe()
    assert "\n" not in text
    assert text.startswith("flow nyc-to-atl: consumer billing switched from nyc to atl: the flow is failed over to atl")
    assert "reading nyc.orders, orders from the offsets it moved the group to, after waiting 1.2 s" in text
    late = Switch(FLOW, "consumer billing", "nyc", "atl", at(FAILOVER_STARTED), ("nyc.orders", "orders"), 120)
    assert "did not finish in time: duplicates likely" in late.describe()
    assert not Switch(FLOW, "producer", "nyc", "atl", at(FAILOVER_STARTED)).groups_moved


def test_where_names_the_active_cluster_its_bootstrap_and_topics_from_the_target_alone() -> None:
    topo = topology()
    store = InMemoryStateStore("atl")
    store.write(Progress(FLOW, "orders", 0, 10), Progress(FLOW, "orders", 1, 10), Progress(FLOW, "orders-eu", 0, 3))
    before = where(topo, FLOW, store=store)
    assert (before["active_cluster"], before["bootstrap"], before["role"], before["since_ms"]) == (
        "nyc", "127.0.0.1:19092", "active", None)
    store.write(FAILOVER_DONE)
    after = where(topo, FLOW, store=store)
    assert (after["active_cluster"], after["bootstrap"], after["since_ms"], after["since"], after["kind"]) == (
        "atl", "127.0.0.1:29092", 6_000, "1970-01-01T00:00:06.000Z", "failover")
    assert after["topics"] == [
        {"topic": "orders", "consume": ["nyc.orders", "orders"], "produce": "orders"},
        {"topic": "orders-eu", "consume": ["nyc.orders-eu", "orders-eu"], "produce": "orders-eu"},
        {"topic": "payments", "consume": ["nyc.payments", "payments"], "produce": "payments"},
    ]
    assert where(topo, FLOW, ["orders"], store=store)["topics"] == after["topics"][:1]
    json.dumps(after)


def test_only_literal_topic_patterns_count_as_names() -> None:
    assert plain_names(["orders", r"orders\.v1", "pay-.*", "a.b", "x|y"]) == {"orders", "orders.v1"}


def test_a_failover_has_moved_the_groups_once_its_final_role_record_says_so() -> None:
    from geokafka.client.placement import moves_done

    assert not moves_done(Role(FLOW, Role.FAILED_OVER, 5_000, {"kind": "failover"}))  # fenced, groups not moved yet
    assert moves_done(Role(FLOW, Role.FAILED_OVER, 6_000, {"kind": "failover", "groups_moved": True}))
    assert moves_done(Role(FLOW, Role.FAILED_OVER, 6_000, {"kind": "failover", "rpo": {}}))  # an earlier version's
    assert moves_done(Role(FLOW, Role.ACTIVE, 7_000, {"failed_back_to": "east"}))
