"""The latency probe counts its own records only."""

from __future__ import annotations

from geokafka.bench.watch import LAT_HEAD, percentiles, probe_latency_ms, probe_value, reached_at


def test_a_probe_measures_its_own_records_and_ignores_others() -> None:
    mine, other = b"probe-01", b"probe-02"
    value = probe_value(mine, sent_at=100.0, size=1024)
    assert len(value) == 1024
    assert probe_latency_ms(value, mine, now=100.25) == 250.0
    assert probe_latency_ms(probe_value(other, 100.0, 1024), mine, now=100.25) is None  # an earlier probe's
    assert probe_latency_ms(b"\x00" * 1024, mine, now=100.25) is None  # a backlog record of the bench data
    assert probe_latency_ms(value[: LAT_HEAD - 1], mine, now=100.25) is None
    assert probe_latency_ms(None, mine, now=100.25) is None


def test_a_small_probe_record_keeps_its_head() -> None:
    assert len(probe_value(b"probe-01", 1.0, size=4)) == LAT_HEAD


def test_percentiles_use_the_nearest_rank() -> None:
    assert percentiles([float(v) for v in range(1, 101)]) == {"p50_ms": 50.0, "p95_ms": 95.0, "p99_ms": 99.0,
                                                               "max_ms": 100.0}
    assert percentiles([])["p99_ms"] == -1.0


def test_a_copy_is_visible_when_the_ends_first_reached_their_final_sum_not_when_a_reader_got_there() -> None:
    # the ends' sum over time; the copy's last commit made it 2,000,010 (records and commit markers) at 12.0 s
    samples = [(10.0, 0), (11.0, 900_000), (12.0, 2_000_010), (12.05, 2_000_010), (19.0, 2_000_010)]
    assert reached_at(samples, 2_000_010) == 12.0
    assert reached_at(samples, 1_000_000) == 12.0  # half: the first sample at or past it
    assert reached_at(samples, 1) == 11.0
    assert reached_at(samples, 2_000_011) is None
