"""Source rows as the writer needs them: one Arrow batch converted column by column, and the
provenance headers every replicated record gets.

Converting whole columns at once (and the headers as two flat lists plus offsets instead of a
dict per header) is what keeps the per-record Python work of the writer small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from geokafka.control.provenance import ORIGIN_HEADER, PROVENANCE_HEADERS, SOURCE_HEADER

Header = tuple[str, "bytes | None"]


@dataclass(frozen=True)
class Rows:
    """The columns of one Arrow batch as Python lists; headers flattened (row i owns
    ``header_keys[header_starts[i]:header_starts[i + 1]]``)."""

    topics: list[str]
    partitions: list[int]
    offsets: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    timestamps: list[int]
    keep: list[bool | None] | None  # None: the flow has no filter, every row is kept
    header_starts: list[int]
    header_keys: list[str]
    header_values: list[bytes | None]
    has_provenance: bool  # some row already carries gk.* headers (a second hop or a cycle)

    def __len__(self) -> int:
        return len(self.offsets)


def rows_of(batch: Any) -> Rows:
    """Convert a writer input batch (see ``query.source_frame``) into :class:`Rows`."""
    names = batch.schema.names
    headers = batch.column("headers")
    starts = headers.offsets.to_pylist()
    keys = headers.values.field("key").to_pylist()
    values = headers.values.field("value").to_pylist()
    if headers.null_count:  # Arrow lets a null list span values: give those rows no headers
        valid = headers.is_valid().to_pylist()
        kept_keys: list[str] = []
        kept_values: list[bytes | None] = []
        kept_starts = [0]
        for i, ok in enumerate(valid):
            if ok:
                kept_keys.extend(keys[starts[i]:starts[i + 1]])
                kept_values.extend(values[starts[i]:starts[i + 1]])
            kept_starts.append(len(kept_keys))
        starts, keys, values = kept_starts, kept_keys, kept_values
    return Rows(
        topics=batch.column("topic").to_pylist(),
        partitions=batch.column("partition").to_pylist(),
        offsets=batch.column("offset").to_pylist(),
        keys=batch.column("key").to_pylist(),
        values=batch.column("value").to_pylist(),
        timestamps=batch.column("ts").to_pylist(),
        keep=batch.column("keep").to_pylist() if "keep" in names else None,
        header_starts=starts,
        header_keys=keys,
        header_values=values,
        has_provenance=not PROVENANCE_HEADERS.isdisjoint(keys),
    )


def replicated_headers(headers: list[Header], source_cluster: str, target_cluster: str,
                       source: bytes) -> list[Header] | None:
    """The headers a record gets on the target, or None if it must not go there (a cycle).

    ``gk.src`` is replaced by ``source`` (this hop's coordinates); ``gk.origin`` is kept from
    an earlier hop or set to ``source_cluster`` on the first one. A record whose origin is the
    target started there: sending it back would loop.
    """
    out: list[Header] = []
    origin = None
    for name, value in headers:
        if name == SOURCE_HEADER:
            continue
        if name == ORIGIN_HEADER:
            origin = value
        out.append((name, value))
    if origin is None:
        out.append((ORIGIN_HEADER, source_cluster.encode()))
    elif origin.decode(errors="replace") == target_cluster:
        return None
    out.append((SOURCE_HEADER, source))
    return out
