"""Target topics are created, grown and config-synced in one request of each kind for all of a flow's topics
(an in-memory stand-in for geokafka's ClusterAdmin records the requests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from confluent_kafka.admin import NewTopic

from geokafka.control.admin import ClusterAdmin, TopicInfo
from geokafka.control.topic_sync import ensure_target_topics, sync_topic_configs
from geokafka.errors import PartitionMismatchError


@dataclass
class Conn:
    name: str


@dataclass
class InMemoryAdmin:
    """The ClusterAdmin calls topic creation makes, on a dict of topics; every request is recorded."""

    name: str
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    brokers: int = 1
    requests: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def conn(self) -> Conn:
        return Conn(self.name)

    def describe_topics(self, topics: Sequence[str]) -> dict[str, TopicInfo]:
        self.requests.append(("describe", list(topics)))
        return {t: self.topics[t] for t in topics}

    def topic_partitions(self) -> dict[str, int]:
        self.requests.append(("metadata", []))
        return {t: info.partitions for t, info in self.topics.items()}

    def broker_count(self) -> int:
        return self.brokers

    def create_topics(self, topics: Sequence[NewTopic]) -> dict[str, bool]:
        self.requests.append(("create", [t.topic for t in topics]))
        for t in topics:
            self.topics[t.topic] = TopicInfo(t.topic, t.num_partitions, t.replication_factor, dict(t.config))
        return {t.topic: True for t in topics}

    def grow_topics(self, totals: Mapping[str, int]) -> None:
        self.requests.append(("grow", list(totals)))
        for topic, total in totals.items():
            info = self.topics[topic]
            self.topics[topic] = TopicInfo(topic, total, info.replication_factor, info.configs)

    def many_topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        self.requests.append(("configs", list(topics)))
        return {t: dict(self.topics[t].configs) for t in topics}

    def set_topic_configs(self, topic: str, changes: dict[str, str | None]) -> None:
        self.requests.append(("alter", [topic]))


def admins(count: int) -> tuple[ClusterAdmin, ClusterAdmin, InMemoryAdmin, InMemoryAdmin]:
    source = InMemoryAdmin("nyc", {f"t{i}": TopicInfo(f"t{i}", 3, 3, {"retention.ms": "1000"}) for i in range(count)},
                           brokers=3)
    target = InMemoryAdmin("atl", {"nyc.t0": TopicInfo("nyc.t0", 2, 1, {})})
    return source, target, source, target  # type: ignore[return-value]


def test_two_hundred_topics_cost_one_request_of_each_kind() -> None:
    source, target, src, tgt = admins(200)
    names = {f"t{i}": f"nyc.t{i}" for i in range(200)}
    pairs = ensure_target_topics(source, target, names, grow=True)
    assert [(p.source, p.target, p.partitions) for p in pairs[:2]] == [("t0", "nyc.t0", 3), ("t1", "nyc.t1", 3)]
    assert [kind for kind, _ in src.requests] == ["describe"]
    assert [kind for kind, _ in tgt.requests] == ["metadata", "create", "grow"]
    created = dict(tgt.requests)["create"]
    assert len(created) == 199 and "nyc.t0" not in created  # the existing one is grown, not created
    assert dict(tgt.requests)["grow"] == ["nyc.t0"] and tgt.topics["nyc.t0"].partitions == 3
    assert tgt.topics["nyc.t7"].replication_factor == 1  # no more than the target's brokers
    assert tgt.topics["nyc.t7"].configs["retention.ms"] == "1000"

    tgt.requests.clear()
    src.requests.clear()
    changed = sync_topic_configs(source, target, pairs)
    assert changed == {"nyc.t0": {"retention.ms": "1000", "message.timestamp.type": "CreateTime"}}
    assert [kind for kind, _ in src.requests] == ["configs"]
    assert [kind for kind, _ in tgt.requests] == ["configs", "alter"]


def test_a_smaller_target_without_partition_sync_names_both_topics_and_creates_nothing() -> None:
    source, target, _, tgt = admins(3)
    with pytest.raises(PartitionMismatchError, match="target topic nyc.t0 on atl has 2 partitions, source t0 on nyc"):
        ensure_target_topics(source, target, {f"t{i}": f"nyc.t{i}" for i in range(3)}, grow=False)
    assert [kind for kind, _ in tgt.requests] == ["metadata"]


def test_a_sync_given_looks_reads_the_configs_through_them_and_alters_through_the_target_admin() -> None:
    source, target, src, tgt = admins(3)
    pairs = ensure_target_topics(source, target, {f"t{i}": f"nyc.t{i}" for i in range(3)}, grow=True)
    tgt.topics["nyc.t1"] = TopicInfo("nyc.t1", 3, 1, {"retention.ms": "5"})  # changed on the target since
    src_look, tgt_look = InMemoryAdmin("nyc", dict(src.topics)), InMemoryAdmin("atl", dict(tgt.topics))
    src.requests.clear()
    tgt.requests.clear()
    changed = sync_topic_configs(source, target, pairs, looks=(src_look, tgt_look))  # type: ignore[arg-type]
    # nyc.t0 existed before the flow (grown, never synced); nyc.t1 was changed on the target; nyc.t2 is in line
    wanted = {"retention.ms": "1000", "message.timestamp.type": "CreateTime"}
    assert changed == {"nyc.t0": wanted, "nyc.t1": wanted}
    assert [kind for kind, _ in src_look.requests] == ["configs"] and [kind for kind, _ in tgt_look.requests] == ["configs"]
    assert src.requests == [] and tgt.requests == [("alter", ["nyc.t0"]), ("alter", ["nyc.t1"])]
