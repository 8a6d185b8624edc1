"""The stretch drill's judgement (plan against measurements) and its files, without a broker."""

from __future__ import annotations

import json
from pathlib import Path

from geokafka.drills.stretch import DrillObservation, PartitionObservation, compare
from geokafka.drills.stretch.compare import automatic_rto
from geokafka.drills.stretch.stretch_cluster import cluster_spec
from geokafka.drills.stretch.timeline import write_json, write_png
from geokafka.drills.stretch.traffic import AckLog
from geokafka.planning import PRESETS, layout_of, plan_stretch


def observation(delays: list[float | None], predicted: bool, lost: int = 0, quorum: bool | None = True,
                after_recovery: list[float | None] | None = None) -> DrillObservation:
    parts = tuple(
        PartitionObservation("orders", i, predicted, d, (after_recovery or [None] * len(delays))[i])
        for i, d in enumerate(delays)
    )
    return DrillObservation(20.0, parts, acked=1000, acked_lost=lost, acked_unreadable=0, quorum_available=quorum,
                            recovered=after_recovery is not None)


def test_three_dcs_agreement_and_rto() -> None:
    verdict = plan_stretch(PRESETS["3dc"]).verdict_for_dc("dc1")
    obs = observation([8.4, 9.9, 8.5, 8.4, 9.8, 8.6], predicted=True)
    assert compare(verdict, obs).agrees
    assert automatic_rto(obs) == 9.9


def test_lost_acked_record_against_rpo_zero_disagrees() -> None:
    verdict = plan_stretch(PRESETS["3dc"]).verdict_for_dc("dc1")
    result = compare(verdict, observation([9.0] * 6, predicted=True, lost=3))
    assert not result.agrees
    assert "plan: RPO 0 when losing dc1; drill: 3 of 1000 acknowledged records are missing" in result.disagreements


def test_partition_that_never_came_back_disagrees_with_automatic() -> None:
    verdict = plan_stretch(PRESETS["3dc"]).verdict_for_dc("dc2")
    result = compare(verdict, observation([9.0, None, 9.0, 9.0, 9.0, 9.0], predicted=True))
    assert result.disagreements == (
        "plan: orders-1 stays writable without manual action after losing dc2; drill: no write accepted within 20 s",)
    assert automatic_rto(observation([9.0, None], predicted=True)) is None


def test_quorum_loss_case_agrees_when_nothing_resumes() -> None:
    verdict = plan_stretch(PRESETS["2dc"]).verdict_for_dc("dc1")
    assert compare(verdict, observation([None] * 6, predicted=False, quorum=False)).agrees


def test_writes_resuming_by_themselves_against_manual_disagrees() -> None:
    verdict = plan_stretch(PRESETS["2dc"]).verdict_for_dc("dc1")
    result = compare(verdict, observation([None, 9.5, None, None, None, None], predicted=False, quorum=True))
    assert len(result.disagreements) == 2
    assert "writes resumed by themselves after 9.5 s" in result.disagreements[0]
    assert "quorum is lost" in result.disagreements[1]


def test_manual_steps_that_do_not_restore_writes_disagree() -> None:
    verdict = plan_stretch(PRESETS["2dc"]).verdict_for_dc("dc1")
    ok = observation([None] * 6, predicted=False, quorum=False, after_recovery=[30.0] * 6)
    assert compare(verdict, ok).agrees
    bad = observation([None] * 6, predicted=False, quorum=False, after_recovery=[30.0] * 5 + [None])
    assert "still no write accepted after running them" in compare(verdict, bad).disagreements[0]


def test_rpo_above_zero_without_loss_is_a_note_not_a_disagreement() -> None:
    plan = plan_stretch(PRESETS["2.5dc"].model_copy(update={"topics": {
        "orders": PRESETS["2.5dc"].topics["orders"].model_copy(update={"min_insync_replicas": 2})}}))
    verdict = plan.verdict_for_dc("dc1")
    result = compare(verdict, observation([9.0] * 6, predicted=True))
    assert result.agrees and "worst case" in result.notes[0]


def test_drill_cluster_combines_controllers_into_brokers_of_their_dc(tmp_path: Path) -> None:
    cluster = cluster_spec(layout_of(PRESETS["2.5dc"]), "x", tmp_path, 31692, 256)
    roles = {n.node_id: (n.is_broker, n.is_controller, n.rack, n.broker_port, n.controller_port)
             for n in cluster.spec.nodes}
    assert roles == {
        1: (True, True, "dc1", 31692, 31792), 2: (True, False, "dc1", 31693, None),
        3: (True, True, "dc2", 31694, 31793), 4: (True, False, "dc2", 31695, None),
        103: (False, True, "dc3", None, 31794),
    }
    assert cluster.controller_host == {101: 1, 102: 3, 103: 103}
    assert cluster.nodes_in("dc3") == [103]
    assert cluster.bootstrap_outside("dc1") == "127.0.0.1:31694,127.0.0.1:31695"


def test_ack_log_resume_times() -> None:
    log = AckLog(t0=100.0)
    log.sent_at.update({0: 100.5, 1: 105.5, 2: 106.0})

    class Msg:
        def __init__(self, seq: int, partition: int) -> None:
            self.seq, self.p = seq, partition

        def value(self) -> bytes:
            return str(self.seq).encode()

        def topic(self) -> str:
            return "orders"

        def partition(self) -> int:
            return self.p

        def offset(self) -> int:
            return self.seq

    for seq, partition in ((0, 0), (1, 1), (2, 0)):
        log.on_delivery(None, Msg(seq, partition))
    assert set(log.acked) == {0, 1, 2} and log.acked[2][:2] == (("orders", 0), 2)
    log.acked.update({0: (("orders", 0), 0, 100.7), 1: (("orders", 1), 1, 114.0), 2: (("orders", 0), 2, 115.0)})
    assert log.resumed_at(105.0) == {("orders", 1): 114.0, ("orders", 0): 115.0}
    assert log.acked_per_second(20)[0] == 1 and sum(log.acked_per_second(20)) == 3


def test_report_files(tmp_path: Path) -> None:
    json_path = write_json({"a": 1}, tmp_path / "r" / "x.json")
    assert json.loads(json_path.read_text()) == {"a": 1}
    png = write_png(tmp_path / "r" / "x.png", "t", [0, 200, 200, 0, 0, 400, 200], [0, 190, 210, 0, 0, 380, 220],
                    3.0, "kill dc1", 5.2, 4.0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png2 = write_png(tmp_path / "y.png", "t", [200, 0, 0], [], 1.0, "kill dc1", None)
    assert png2.stat().st_size > 1000


def test_timeline_labels_do_not_overlap_and_both_resume_markers_are_named() -> None:
    import matplotlib.pyplot as plt

    from geokafka.drills.stretch.timeline import timeline_figure

    acked = [200] * 30 + [0] * 15 + [3000, 2500, 900, 700] + [200] * 20  # a backlog flushed over 4 s
    fig = timeline_figure("t", acked, [190] * len(acked), 30.2, "kill dc2", 45.6, None, 44.1)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        [ax] = fig.axes
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "first partition writable (+13.9 s)" in labels and "every partition writable (+15.4 s)" in labels
        boxes = [t.get_window_extent(renderer) for t in ax.texts] + [ax.get_legend().get_window_extent(renderer)]
        assert len(ax.texts) == 1  # one backlog label, not one per clipped second
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        assert ax.title.get_window_extent(renderer).x1 <= fig.bbox.x1
    finally:
        plt.close(fig)


def test_drill_refuses_observers_before_starting_anything(tmp_path: Path) -> None:
    import pytest

    from geokafka.drills.stretch import StretchDrillOptions, run_stretch_drill
    from geokafka.errors import TopologyError
    from geokafka.topology.schema import Stretch, StretchDC

    s = Stretch(dcs={"a": StretchDC(brokers=2, controllers=1, observers=1), "b": StretchDC(brokers=2, controllers=1),
                     "c": StretchDC(controllers=1)})
    with pytest.raises(TopologyError, match="no observers"):
        run_stretch_drill(StretchDrillOptions("x", s, tmp_path / "home", tmp_path / "out"))
    assert not (tmp_path / "home").exists()


def test_drill_moves_aside_when_a_port_is_taken(tmp_path: Path) -> None:
    import socket

    from geokafka.drills.stretch.stretch_cluster import cluster_on_free_ports
    from geokafka.infra.local_cluster import port_is_free, ports_of

    layout = layout_of(PRESETS["3dc"])

    def block_free(base: int) -> bool:
        return all(port_is_free(p) for p in ports_of(cluster_spec(layout, "x", tmp_path, base, 256).spec))

    # Below the ephemeral range (32768-60999), where a busy machine's client connections take ports
    # at random: a base whose own block and first shifted block are free, so the move is certain.
    base = next(b for b in range(20_000, 32_000, 500) if block_free(b) and block_free(b + 20))
    taken = cluster_spec(layout, "x", tmp_path, base, 256).spec.nodes[0].broker_port
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        cluster = cluster_on_free_ports(layout, "x", tmp_path, base, 256)
    assert cluster.spec.nodes[0].broker_port == taken + 20
