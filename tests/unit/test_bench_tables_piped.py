"""`geokafka bench`'s tables in a log or CI: piped, each row stays on one line instead of wrapping its cells."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from geokafka.cli.bench_cmd import PIPED_MAX_WIDTH, print_tables


def _wide_table() -> Table:
    columns = [f"column {i}" for i in range(19)]  # as many as the scaling table has
    table = Table(*columns, title="scaling")
    table.add_row(*[f"value-{i}" for i in range(19)])
    return table


def test_piped_tables_keep_each_row_on_one_line() -> None:
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False, color_system=None)
    print_tables(console, [_wide_table()])
    lines = out.getvalue().splitlines()
    row = [line for line in lines if "value-0" in line]
    assert len(row) == 1 and "value-18" in row[0]  # the whole row on one line
    assert 160 < max(len(line) for line in lines) <= PIPED_MAX_WIDTH
    assert not any("column 0" in line and "column 18" not in line for line in lines)  # the header too


def test_on_a_terminal_tables_fit_its_width() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    print_tables(console, [_wide_table()])
    assert max(len(line) for line in out.getvalue().splitlines()) <= 100
