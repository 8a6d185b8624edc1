"""`status` shows the operator's view of the source beside the mirror's: a source that does not answer from here
while the live mirror still reaches it is not shown as lost (pure)."""

from __future__ import annotations

from geokafka.monitoring.status import headline_state

NOW = 100_000


def test_an_unreachable_source_the_live_mirror_still_reaches_keeps_the_mirrors_state() -> None:
    running = {"state": "running", "at_ms": NOW - 3_000}
    assert headline_state(running, NOW, source_reachable=False, mirror_reaches_source=True) == ("running", 3.0)
    assert headline_state(running, NOW, source_reachable=False, mirror_reaches_source=False)[0] == "source-unreachable"


def test_a_mirror_that_is_down_or_stopped_gives_no_second_view() -> None:
    stale = {"state": "running", "at_ms": NOW - 60_000}
    stopped = {"state": "stopped", "at_ms": NOW - 1_000}
    for record in (stale, stopped, None):
        assert headline_state(record, NOW, source_reachable=False, mirror_reaches_source=True)[0] == "source-unreachable"
    failed_over = {"state": "running", "at_ms": NOW - 1_000}
    assert headline_state(failed_over, NOW, False, role="failed-over", mirror_reaches_source=True)[0] == "failed-over"


def test_status_knows_the_reverse_flow_of_a_failback_which_no_file_declares() -> None:
    import pytest

    from geokafka.errors import TopologyError
    from geokafka.monitoring.collect import StatusCollector
    from geokafka.topology import parse_topology

    topology = parse_topology("""\
clusters:
  nyc: {bootstrap: 127.0.0.1:1}
  atl: {bootstrap: 127.0.0.1:2}
flows:
  nyc-to-atl: {source: nyc, target: atl, topics: [orders]}
""")
    collector = StatusCollector(topology, ["nyc-to-atl-failback"])
    reverse = collector.topology.flows["nyc-to-atl-failback"]
    assert (reverse.source, reverse.target) == ("atl", "nyc")
    with pytest.raises(TopologyError):
        StatusCollector(topology, ["lon-to-atl-failback"])
