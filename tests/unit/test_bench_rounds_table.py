"""`geokafka bench`'s result table prints every round of a record size, each later round's contenders in the order
they ran, and says that the ratios are the rounds' means."""

from __future__ import annotations

import io

from rich.console import Console

from geokafka.cli.bench_cmd import render


def _result(rate: float) -> dict[str, object]:
    return {"ran": True, "records_per_s": rate, "mb_per_s": rate / 1000, "cpu_s_per_gb": 7.0, "basis": "",
            "load_avg_1m": [1.0, 1.0]}


def test_each_later_round_is_a_row_per_contender_in_its_order() -> None:
    run = {"geokafka": _result(1000.0), "limit": _result(900.0),
           "later_rounds": [{"round": 2, "order": ["geokafka", "limit"], "geokafka": _result(1100.0),
                             "limit": {"ran": False, "reason": "RuntimeError: the loop exited"}}],
           "ratios": {"geokafka_over_limit": 1.167}}
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(render({"runs": {"1k": run}})[0])
    rows = [line for line in out.getvalue().splitlines() if "1k" in line]
    assert [("r2" in row, row.split("│")[2].strip()) for row in rows] == [
        (False, "limit"), (False, "geokafka"), (True, "geokafka"), (True, "limit"), (False, "ratios (means of rounds)")]
    assert "1,100" in rows[2] and "not run" in rows[3] and "gk/limit 1.17" in rows[4]


def test_a_geokafka_run_without_the_spark_class_archive_says_so() -> None:
    run = {"geokafka": {**_result(1000.0), "config": {"class_archive": False}},
           "limit": _result(900.0), "ratios": {}}
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(render({"runs": {"1k": run}})[0])
    rows = {row.split("│")[2].strip(): row for row in out.getvalue().splitlines() if "1k" in row}
    assert "no class archive" in rows["geokafka"] and "no class archive" not in rows["limit"]
