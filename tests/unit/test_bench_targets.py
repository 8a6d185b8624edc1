"""The bench's targets: each computed from a report's figures, met or missed, and unmeasured where a figure is
missing."""

from __future__ import annotations

from typing import Any

from geokafka.bench.run import mean_over_rounds, ratios, round_order, targets


def _report(**scaling_mm2: Any) -> dict[str, Any]:
    def ran(**fields: Any) -> dict[str, Any]:
        return {"ran": True, **fields}

    k1 = {"geokafka": ran(cpu_s_per_gb=7.0, latency={"p50_ms": 20.0, "p99_ms": 240.0}),
          "mm2": ran(cpu_s_per_gb=10.0, latency={"p50_ms": 25.0, "p99_ms": 900.0}),
          "mm2-eos": ran(cpu_s_per_gb=9.0), "limit": ran(cpu_s_per_gb=6.0),
          "ratios": {"geokafka_over_mm2": 1.31, "geokafka_over_mm2_eos": 1.1, "geokafka_over_limit": 0.79}}
    b100 = {"geokafka": ran(cpu_s_per_gb=60.0), "limit": ran(cpu_s_per_gb=40.0),
            "ratios": {"geokafka_over_limit": 0.7}}
    gk = {"contender": "geokafka", "partitions": 2000, "ran": True, "first_record_s": 20.0, "backlog_done_s": 60.0,
          "p50_ms": 900.0, "p99_ms": 5000.0, "new_topic_s": 14.0, "idle_cpu_percent": 7.0, "records_per_s": 9000.0}
    mm2 = {"contender": "mm2", "partitions": 2000, "ran": True, "first_record_s": 25.0, "backlog_done_s": 40.0,
           "p50_ms": 1200.0, "p99_ms": 6000.0, "new_topic_s": 12.0, "idle_cpu_percent": 3.6, **scaling_mm2}
    small = {"contender": "geokafka", "partitions": 12, "ran": True, "records_per_s": 10000.0}
    return {"runs": {"1k": k1, "100b": b100}, "scaling": [small, gk, mm2]}


def _met(report: dict[str, Any]) -> dict[str, tuple[Any, bool | None]]:
    return {t["target"]: (t["value"], t["met"]) for t in targets(report)}


def test_each_target_is_met_or_missed_from_the_figures_of_one_run() -> None:
    met = _met(_report())
    assert met["throughput geokafka/MM2 at-least-once (1 KiB)"] == (1.31, True)
    assert met["throughput geokafka/copy loop (1 KiB)"] == (0.79, False)
    assert met["CPU s/GB geokafka/copy loop (1 KiB)"] == (1.167, True)
    assert met["throughput geokafka/copy loop (100 B)"] == (0.7, True)
    assert met["CPU s/GB geokafka/copy loop (100 B)"] == (1.5, True)
    assert met["p50 latency geokafka (ms)"] == (20.0, True)
    assert met["p99 latency geokafka (ms)"] == (240.0, True)
    assert met["first record at 2000 partitions (s)"] == (20.0, True)
    assert met["backlog on the target at 2000 partitions (s)"] == (60.0, False)
    assert met["p50 at 2000 partitions (ms)"] == (900.0, True)
    assert met["p99 at 2000 partitions (ms)"] == (5000.0, True)
    assert met["a new topic copied at 2000 partitions (s)"] == (14.0, False)
    assert met["idle CPU at 2000 partitions (%)"] == (7.0, True)  # 2 x 3.6


def test_a_comparison_with_a_figure_mirrormaker_did_not_give_is_not_measured() -> None:
    met = _met(_report(new_topic_s=None, idle_cpu_percent=None))
    assert met["a new topic copied at 2000 partitions (s)"] == (14.0, None)
    assert met["idle CPU at 2000 partitions (%)"] == (7.0, None)
    idle_over = _met(_report(idle_cpu_percent=3.4))
    assert idle_over["idle CPU at 2000 partitions (%)"] == (7.0, False)


def test_a_later_round_makes_each_compared_figure_the_mean_of_the_rounds() -> None:
    report = _report()
    k1 = report["runs"]["1k"]
    k1["geokafka"].update(records_per_s=100.0)
    k1["mm2"].update(records_per_s=100.0)
    k1["later_rounds"] = [{"round": 2, "order": list(round_order(2)),
                           "geokafka": {"ran": True, "records_per_s": 140.0, "cpu_s_per_gb": 9.0,
                                        "latency": {"p50_ms": 30.0, "p99_ms": 260.0}},
                           "mm2": {"ran": True, "records_per_s": 80.0, "cpu_s_per_gb": 10.0,
                                   "latency": {"p50_ms": 21.0}},
                           "limit": {"ran": False, "reason": "RuntimeError: gone"}}]
    assert ratios(k1)["geokafka_over_mm2"] == 1.333  # (100 + 140) / 2 over (100 + 80) / 2
    k1["ratios"] = ratios(k1)
    met = _met(report)
    assert met["p50 latency geokafka (ms)"] == (25.0, False)  # 25 against MM2's 23
    assert met["p99 latency geokafka (ms)"] == (250.0, True)
    assert met["CPU s/GB geokafka/copy loop (1 KiB)"] == (1.333, False)  # 8 over the one round the loop ran: 6
    assert mean_over_rounds(k1, "limit", "cpu_s_per_gb") == 6.0


def test_every_second_round_runs_the_compared_contenders_in_the_reverse_order() -> None:
    assert round_order(1) == ("limit", "mm2", "mm2-eos", "geokafka")
    assert round_order(2) == ("geokafka", "mm2-eos", "mm2", "limit")
    assert round_order(3) == round_order(1)
