"""MM2's guards for group offset sync, as a pure decision per partition."""

from __future__ import annotations

from geokafka.control.offsets import PartitionTranslation, decide_commit
from geokafka.control.offsets._groups_io import ABSENT, GroupActivity


def translation(target: int | None, caught_up: bool = True, note: str = "") -> PartitionTranslation:
    return PartitionTranslation("orders", 0, 40, "east.orders", target, caught_up, note=note)


def test_commits_translation_to_absent_or_empty_group() -> None:
    assert decide_commit(translation(17), previous=None, activity=ABSENT).action == "commit"
    d = decide_commit(translation(17), previous=3, activity=GroupActivity("empty", 0))
    assert (d.action, d.offset, d.reason) == ("commit", 17, "translated")


def test_active_target_group_is_skipped_with_its_state() -> None:
    d = decide_commit(translation(17), previous=None, activity=GroupActivity("stable", 2))
    assert d.action == "skip"
    assert "active" in d.reason and "stable" in d.reason and "2 members" in d.reason
    # members without a stable state (rebalancing) count as active too
    rebalancing = GroupActivity("preparing_rebalancing", 0)
    assert decide_commit(translation(17), previous=None, activity=rebalancing).action == "skip"


def test_never_rewinds_a_target_group() -> None:
    d = decide_commit(translation(17), previous=25, activity=ABSENT)
    assert (d.action, d.offset) == ("skip", 17)
    assert "already at 25" in d.reason and "never rewound" in d.reason
    assert decide_commit(translation(17), previous=17, activity=ABSENT).action == "unchanged"


def test_clamp_to_end_caps_the_offset() -> None:
    d = decide_commit(translation(17), previous=None, activity=ABSENT, end_offset=12)
    assert (d.action, d.offset) == ("commit", 12)
    assert "clamped to target end 12" in d.reason
    assert decide_commit(translation(17), previous=None, activity=ABSENT, end_offset=30).offset == 17


def test_not_caught_up_is_committed_but_marked_provisional() -> None:
    d = decide_commit(translation(17, caught_up=False), previous=None, activity=ABSENT)
    assert d.action == "commit" and "provisional" in d.reason


def test_missing_target_partition_is_skipped_with_the_note() -> None:
    note = "east.orders/0 does not exist on west yet"
    d = decide_commit(translation(None, note=note), previous=None, activity=ABSENT)
    assert (d.action, d.reason) == ("skip", note)


def test_follows_a_source_rewind_where_the_sync_left_the_group() -> None:
    # the sync committed 25 earlier; the source group was reset for reprocessing: follow it back
    d = decide_commit(translation(17), previous=25, activity=ABSENT, synced=25)
    assert (d.action, d.offset) == ("commit", 17)
    assert "rewound" in d.reason and "25" in d.reason and not d.held


def test_a_position_consumers_reached_on_the_target_is_theirs_unless_overwritten() -> None:
    d = decide_commit(translation(17), previous=25, activity=ABSENT, synced=20)
    assert (d.action, d.held) == ("skip", True)
    assert "the sync wrote 20" in d.reason
    forced = decide_commit(translation(17), previous=25, activity=ABSENT, synced=20, overwrite=True)
    assert (forced.action, forced.offset) == ("commit", 17)
    assert "overwrites 25" in forced.reason


def test_an_active_target_group_is_held_even_when_overwriting() -> None:
    d = decide_commit(translation(17), previous=25, activity=GroupActivity("stable", 1), synced=25, overwrite=True)
    assert (d.action, d.held) == ("skip", True)


def test_a_sync_remembers_what_it_wrote_when_a_read_of_the_state_misses_it() -> None:
    from geokafka.control.offsets import SyncMemory
    from geokafka.control.state_records import GroupCheckpoint

    wrote = GroupCheckpoint("f", "g", {("t", 0): 250}, 2_000, {("east.t", 0): 250})
    memory = SyncMemory()
    memory.remember({"g": wrote})
    older = GroupCheckpoint("f", "g", {("t", 0): 200}, 1_000, {})
    other = GroupCheckpoint("f", "h", {("t", 0): 5}, 1_500, {("east.t", 0): 5})
    # a read that stopped before the newest checkpoint (or found none): the remembered one counts
    assert memory.merged({"g": older, "h": other}) == {"g": wrote, "h": other}
    assert memory.merged({}) == {"g": wrote}
    # one written later (by another process, e.g. failover) wins over the remembered one
    newer = GroupCheckpoint("f", "g", {("t", 0): 100}, 3_000, {("east.t", 0): 100})
    assert memory.merged({"g": newer}) == {"g": newer}
