"""A flow's start fences its writers before it creates target topics: a target's transaction coordinator
starts at its first transactional id, and its partitions wait behind every partition created before them
(measured on a 1-node target: 11 s after 2,000 new partitions, 0.1 s before them). The start runs on
in-memory stand-ins of geokafka's ClusterAdmin and state store; the state topic's creation is left out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from test_target_topics import InMemoryAdmin

from geokafka.control.admin import TopicInfo
from geokafka.control.state_store import InMemoryStateStore
from geokafka.pipeline import flow_start
from geokafka.pipeline.flow_start import FlowStarter
from geokafka.pipeline.groups import group_transactional_id
from geokafka.pipeline.startup import StartupTimeline
from geokafka.topology.schema import Flow


@dataclass
class StartAdmin(InMemoryAdmin):
    """The few calls a start makes beyond topic creation; ``appears`` is a topic the source gains after its
    first listing (created while the start runs)."""

    appears: str | None = None
    listings: int = 0

    def check_reachable(self) -> None:
        return None

    def topic_partitions(self) -> dict[str, int]:
        self.listings += 1
        if self.appears and self.listings == 2:
            self.topics[self.appears] = TopicInfo(self.appears, 2, 1, {})
        return super().topic_partitions()

    def log_ranges(self, partitions: dict[str, int]) -> dict[str, dict[int, tuple[int, int]]]:
        return {t: dict.fromkeys(range(n), (0, 0)) for t, n in partitions.items()}

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        return {t: f"id-{t}" for t in topics}

    def max_message_bytes(self, topics: list[str]) -> dict[str, int]:
        return dict.fromkeys(topics, 1_048_588)


@dataclass
class Clients:
    source_admin: StartAdmin
    target_admin: StartAdmin


@dataclass
class Fences:
    """What the fencer was asked, with the target topics that existed at that moment."""

    target: StartAdmin
    calls: list[tuple[list[str], list[str]]] = field(default_factory=list)

    def __call__(self, conn: object, ids: list[str]) -> None:
        self.calls.append((list(ids), sorted(self.target.topics)))


def writers(groups: int) -> list[str]:
    """The transactional ids of the flow's first generation of ``groups`` partition groups."""
    return [group_transactional_id("orders", 0, g) for g in range(groups)]


def start(source: StartAdmin, target: StartAdmin, monkeypatch: pytest.MonkeyPatch) -> tuple[Fences, list[str]]:
    monkeypatch.setattr(flow_start, "ensure_state_topic", lambda admin, store: None)
    fences = Fences(target)
    flow = Flow(source="nyc", target="atl", topics=["t.*"], sync=["partitions"])
    starter = FlowStarter("orders", flow, target.conn, Clients(source, target), InMemoryStateStore(),  # type: ignore[arg-type]
                          2, StartupTimeline(), fences)
    prepared = starter.prepare()
    return fences, [p.target for p in prepared.pairs]


def test_the_writers_are_fenced_before_any_target_topic_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    source = StartAdmin("nyc", {f"t{i}": TopicInfo(f"t{i}", 3, 1, {}) for i in range(4)})
    target = StartAdmin("atl")
    fences, created = start(source, target, monkeypatch)
    assert fences.calls == [(writers(2), [])]
    assert created == ["nyc.t0", "nyc.t1", "nyc.t2", "nyc.t3"] and sorted(target.topics) == created


def test_a_topic_that_appears_meanwhile_is_planned_and_fenced_again(monkeypatch: pytest.MonkeyPatch) -> None:
    source = StartAdmin("nyc", {"t0": TopicInfo("t0", 1, 1, {})}, appears="t1")
    target = StartAdmin("atl")
    fences, created = start(source, target, monkeypatch)
    assert created == ["nyc.t0", "nyc.t1"]
    # planned on one partition (one group), created for three: the second plan has two groups, fenced once
    # the topics exist
    assert [ids for ids, _ in fences.calls] == [writers(1), writers(2)]
    assert fences.calls[1][1] == ["nyc.t0", "nyc.t1"]

