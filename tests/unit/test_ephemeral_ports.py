"""Local ports inside the kernel's ephemeral range are noticed (a reconnecting client can take them)."""

from __future__ import annotations

from pathlib import Path

from geokafka.topology.ports import ephemeral_overlap, ephemeral_range


def test_the_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    file = tmp_path / "ip_local_port_range"
    file.write_text("32768\t60999\n")
    assert ephemeral_range(file) == (32768, 60999)
    assert ephemeral_range(tmp_path / "absent") is None
    file.write_text("garbage\n")
    assert ephemeral_range(file) is None


def test_only_ports_inside_the_range_are_named() -> None:
    assert ephemeral_overlap([29092, 29192, 39092, 60999, 61000], (32768, 60999)) == [39092, 60999]
    assert ephemeral_overlap([39092], None) == []


def test_the_built_in_drill_layouts_stay_below_the_usual_range() -> None:
    from geokafka.drills.stretch.stretch_cluster import cluster_spec
    from geokafka.planning import PRESETS, plan_stretch

    for name, stretch in PRESETS.items():
        spec = cluster_spec(plan_stretch(stretch).layout, name, Path("/nonexistent"), stretch.base_port, 256).spec
        ports = [p for n in spec.nodes for p in (n.broker_port, n.controller_port) if p is not None]
        # + 80: cluster_on_free_ports may shift a layout that far; + 50: the guard test's quiet cluster
        assert max(ports) + 80 + 50 < 32768, (name, max(ports))
