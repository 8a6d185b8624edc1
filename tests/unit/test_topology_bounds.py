"""Bounded input: a huge, deeply nested or enormous topology is refused in one line, fast.

Before the bounds a 50 MB file kept PyYAML busy for a quarter of an hour and 50,000 nested
``[`` ended in ``InternalError: RecursionError``. The hostile-input suite runs the same files
through the real CLI in a subprocess (tests/integration/test_hostile_input.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from geokafka.cli.main import cli
from geokafka.errors import TopologyError
from geokafka.topology import check_topology_text, load_topology, parse_topology
from geokafka.topology._yaml import MAX_DEPTH, MAX_FILE_BYTES, MAX_VALUES
from geokafka.topology.schema import MAX_PLAN_OUTCOMES, MAX_STRETCH_PARTITIONS

FAST_S = 1.0  # of its own CPU (a loaded machine stretches wall time, not this): "well under a second"; typical is a few ms


def refused(path: Path | str) -> tuple[str, float]:
    t0 = time.thread_time()
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    elapsed = time.thread_time() - t0
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.exit_code == 2
    return message, elapsed


def test_limits_are_what_the_errors_say() -> None:
    assert (MAX_FILE_BYTES, MAX_DEPTH, MAX_VALUES) == (1024 * 1024, 64, 50_000)


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    line = b"# padding padding padding padding padding padding padding padding\n"
    with path.open("wb") as out:
        out.write(b"clusters:\n  a: {bootstrap: 'h:9092'}\n")
        out.write(line * (50 * 1024 * 1024 // len(line)))
    message, elapsed = refused(path)
    assert message == f"{path}: {path.stat().st_size:,} bytes is more than a topology file may have (1 MiB)"
    assert elapsed < FAST_S


def test_one_byte_over_the_limit_is_refused_and_the_limit_itself_is_read(tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    head = b"clusters:\n  a: {bootstrap: 'h:9092'}\n"
    path.write_bytes(head + b"#" * (MAX_FILE_BYTES - len(head) - 1) + b"\n")
    assert load_topology(path).clusters["a"].bootstrap == "h:9092"
    path.write_bytes(head + b"#" * (MAX_FILE_BYTES - len(head)) + b"\n")
    message, _ = refused(path)
    assert "1,048,577 bytes is more than a topology file may have (1 MiB)" in message


def test_an_endless_file_is_read_no_further_than_the_limit() -> None:
    message, elapsed = refused("/dev/zero")  # size 0 for stat, endless for read
    assert message == "/dev/zero: over 1,048,576 bytes is more than a topology file may have (1 MiB)"
    assert elapsed < FAST_S


def test_text_given_directly_is_bounded_too() -> None:
    checked = check_topology_text("#" * (MAX_FILE_BYTES + 1), "big.yaml")
    assert [str(p) for p in checked.problems] == [
        "big.yaml: 1,048,577 bytes is more than a topology file may have (1 MiB)"]


@pytest.mark.parametrize("text", [
    "clusters: " + "[" * 50_000,                                  # flow style, unclosed
    "clusters: " + "[" * 50_000 + "]" * 50_000 + "\n",            # flow style, well formed
    "clusters:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 1000)),  # block style
    "x: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n",
], ids=["unclosed-lists", "lists", "indented-mappings", "flow-mappings"])
def test_deep_nesting_is_refused_without_recursion(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    message, elapsed = refused(path)
    assert message.startswith(f"{path}:"), message
    assert message.endswith(": nested more than 64 levels deep (a topology needs fewer than 10)"), message
    assert elapsed < FAST_S


def test_nesting_up_to_the_limit_reaches_the_schema() -> None:
    deepest = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"  # the top mapping is level 1
    assert [p.what for p in check_topology_text(deepest, "t.yaml").problems][0].startswith("unknown key")
    one_more = "x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"
    assert [str(p) for p in check_topology_text(one_more, "t.yaml").problems] == [
        "t.yaml:1: nested more than 64 levels deep (a topology needs fewer than 10)"]


def test_too_many_values_are_refused_before_the_schema_sees_them(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("clusters: {}\nflows:\n  f:\n    topics: [" + ",".join(["t"] * (MAX_VALUES + 10)) + "]\n")
    message, elapsed = refused(path)
    assert message == f"{path}:4: more than 50,000 values (a topology has hundreds)"
    assert elapsed < FAST_S


def test_aliases_count_once_and_do_not_expand() -> None:
    # a "billion laughs" of aliases: 9 levels of 9 references; it is refused by the schema, fast
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    t0 = time.thread_time()
    checked = check_topology_text("\n".join(lines) + "\nclusters: {}\n", "laughs.yaml")
    assert time.thread_time() - t0 < FAST_S
    assert checked.problems[0].what == "unknown key"


def test_yaml_syntax_errors_keep_pyyamls_wording() -> None:
    checked = check_topology_text("clusters: *nowhere\n", "t.yaml")
    assert [str(p) for p in checked.problems] == ["t.yaml:1: invalid YAML: found undefined alias 'nowhere'"]


def test_cli_refuses_a_deep_file_in_one_line_with_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("clusters: " + "[" * 50_000, encoding="utf-8")
    result = CliRunner().invoke(cli, ["-f", str(path), "validate"])
    assert result.exit_code == 2
    says = "nested more than 64 levels deep (a topology needs fewer than 10)"
    assert result.stderr == f"TopologyError: {path}:1: {says}\n"
    assert "RecursionError" not in result.output


STRETCH = "stretch:\n  dcs:\n{dcs}  topics:\n{topics}"


def stretch(dcs: int, brokers: int, topics: dict[str, int]) -> str:
    return STRETCH.format(
        dcs="".join(f"    dc{i}: {{brokers: {brokers}, controllers: 1}}\n" for i in range(dcs)),
        topics="".join(f"    {name}: {{partitions: {n}}}\n" for name, n in topics.items()),
    )


def test_a_plan_that_would_explode_is_refused_by_the_schema() -> None:
    # 3 DCs x 8 brokers: 3 + 24 + 3 = 30 failure cases; 30 x 10,000 partitions > 250,000
    text = stretch(3, 8, {"a": 5000, "b": 5000})
    t0 = time.thread_time()
    with pytest.raises(TopologyError) as caught:
        parse_topology(text, "t.yaml")
    assert time.thread_time() - t0 < FAST_S
    assert str(caught.value) == (
        "t.yaml:1: stretch: a plan would judge 30 failures x 10,000 partitions = 300,000 outcomes, more than "
        "250,000; verdicts do not change with more partitions than a few per broker, so plan with fewer")
    assert MAX_PLAN_OUTCOMES == 250_000


def test_partitions_over_all_topics_are_bounded() -> None:
    text = stretch(1, 1, {f"t{i}": 10_000 for i in range(3)})
    with pytest.raises(TopologyError, match=r"t\.yaml:1: stretch: the topics have 30,000 partitions in all, more "
                                            r"than the 10,000 a plan places"):
        parse_topology(text, "t.yaml")
    assert MAX_STRETCH_PARTITIONS == 10_000


def test_dcs_and_topics_are_bounded() -> None:
    with pytest.raises(TopologyError, match=r"stretch\.dcs: Dictionary should have at most 16 items"):
        parse_topology(stretch(17, 1, {"t": 1}), "t.yaml")
    with pytest.raises(TopologyError, match=r"stretch\.topics: Dictionary should have at most 100 items"):
        parse_topology(stretch(3, 1, {f"t{i}": 1 for i in range(101)}), "t.yaml")


def test_the_largest_plan_allowed_is_planned_in_seconds() -> None:
    from geokafka.planning import plan_stretch

    topology = parse_topology(stretch(5, 3, {"a": 5000, "b": 5000}))
    assert topology.stretch is not None
    t0 = time.thread_time()  # its own CPU, which the machine's load does not stretch
    plan = plan_stretch(topology.stretch)  # (5 DCs + 15 brokers + 5 controllers) x 10,000 partitions = 250,000
    assert len(plan.dc_verdicts) == 5 and len(plan.node_verdicts) == 20
    assert time.thread_time() - t0 < 10  # about 2 s of CPU here
