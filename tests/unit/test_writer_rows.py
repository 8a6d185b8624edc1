"""The writer's column-wise view of an Arrow batch and the headers a replicated record gets."""

from __future__ import annotations

import pyarrow as pa

from geokafka.control.provenance import ORIGIN_HEADER, SOURCE_HEADER
from geokafka.pipeline.rows import replicated_headers, rows_of

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _batch(headers: list, keep: list | None = None) -> pa.RecordBatch:
    n = len(headers)
    cols = {
        "key": pa.array([b"k%d" % i for i in range(n)], pa.binary()),
        "value": pa.array([None if i == 1 else b"v%d" % i for i in range(n)], pa.binary()),
        "topic": pa.array(["t"] * n), "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(10, 10 + n), pa.int64()), "ts": pa.array(range(n), pa.int64()),
        "headers": pa.array(headers, HEADER_TYPE),
    }
    if keep is not None:
        cols["keep"] = pa.array(keep, pa.bool_())
    return pa.RecordBatch.from_pydict(cols)


def _row_headers(rows, i):  # type: ignore[no-untyped-def]
    a, b = rows.header_starts[i], rows.header_starts[i + 1]
    return list(zip(rows.header_keys[a:b], rows.header_values[a:b]))


def test_columns_and_flattened_headers_keep_every_row_and_order():
    rows = rows_of(_batch([
        [{"key": "a", "value": b"1"}, {"key": "b", "value": None}],
        None,
        [],
        [{"key": "c", "value": b"3"}],
    ]))
    assert len(rows) == 4 and rows.offsets == [10, 11, 12, 13] and rows.values[1] is None
    assert [_row_headers(rows, i) for i in range(4)] == [[("a", b"1"), ("b", None)], [], [], [("c", b"3")]]
    assert rows.keep is None and rows.has_provenance is False


def test_a_sliced_batch_reads_its_own_rows_only():
    rows = rows_of(_batch([[{"key": "x", "value": b"0"}], [{"key": "y", "value": b"1"}],
                           [{"key": "z", "value": b"2"}]]).slice(1, 2))
    assert rows.offsets == [11, 12]
    assert [_row_headers(rows, i) for i in range(2)] == [[("y", b"1")], [("z", b"2")]]


def test_keep_column_and_provenance_are_noticed():
    rows = rows_of(_batch([[{"key": ORIGIN_HEADER, "value": b"west"}], []], keep=[True, False]))
    assert rows.keep == [True, False] and rows.has_provenance is True


def test_first_hop_gets_origin_and_source():
    assert replicated_headers([("h", b"1")], "west", "east", b"west/t/0/5") == [
        ("h", b"1"), (ORIGIN_HEADER, b"west"), (SOURCE_HEADER, b"west/t/0/5")]


def test_later_hop_keeps_origin_and_replaces_source():
    headers = [(ORIGIN_HEADER, b"south"), ("h", b"1"), (SOURCE_HEADER, b"south/t/0/9")]
    assert replicated_headers(headers, "west", "east", b"west/t/0/5") == [
        (ORIGIN_HEADER, b"south"), ("h", b"1"), (SOURCE_HEADER, b"west/t/0/5")]


def test_record_that_started_on_the_target_is_not_sent_back():
    assert replicated_headers([(ORIGIN_HEADER, b"east")], "west", "east", b"west/t/0/5") is None
