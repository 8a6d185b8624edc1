"""Provenance headers: where a replicated record came from.

Each replicated record carries two headers, written by the pipeline and read by offset
translation and cycle prevention:

* ``gk.origin`` -- the cluster the record was first produced in. Set on the first hop and
  kept on later hops, so a record never returns to the cluster it started in
  (active/active without loops, even with identity naming).
* ``gk.src`` -- ``<cluster>/<topic>/<partition>/<offset>`` of the record on the cluster it
  was copied from on this hop; replaced at every hop. This is what makes offset translation
  exact.

Records that a failover left behind at the old source and `geokafka reconcile --replay`
produced to the surviving site late carry no ``gk.src`` (they are not in the replicated
order: offset translation treats them as written on the target) but ``gk.origin`` and:

* ``gk.stranded`` -- ``<cluster>/<topic>/<partition>/<offset>`` of the record at the old source;
* ``gk.stranded.failover`` -- when the failover that stranded it started (epoch ms, as text);
* ``gk.stranded.processed-by`` -- the groups (comma-separated) the flow moves on failover whose
  committed offset at the old source was past the record: they had processed it there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from geokafka import contract

ORIGIN_HEADER = contract.ORIGIN_HEADER
SOURCE_HEADER = contract.SOURCE_HEADER
# written by `reconcile --replay` only (Python): the JVM sink copies them like any user header
STRANDED_HEADER = "gk.stranded"
STRANDED_FAILOVER_HEADER = "gk.stranded.failover"
STRANDED_PROCESSED_HEADER = "gk.stranded.processed-by"
PROVENANCE_HEADERS = frozenset({ORIGIN_HEADER, SOURCE_HEADER, STRANDED_HEADER, STRANDED_FAILOVER_HEADER,
                                STRANDED_PROCESSED_HEADER})
_SOURCE_VALUE = re.compile("^" + re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>.+?)",
                                        re.escape(contract.SOURCE_HEADER_VALUE)) + "$")


@dataclass(frozen=True, order=True)
class SourcePosition:
    """The coordinates of a record on the cluster it was copied from."""

    cluster: str
    topic: str
    partition: int
    offset: int

    def encode(self) -> bytes:
        """Header value (the contract's ``headers.source_value``)."""
        return contract.SOURCE_HEADER_VALUE.format(cluster=self.cluster, topic=self.topic, partition=self.partition,
                                                   offset=self.offset).encode()

    @classmethod
    def decode(cls, raw: bytes | str) -> SourcePosition:
        """Parse a header value; raises ValueError on a malformed one."""
        text = raw.decode() if isinstance(raw, bytes) else raw
        found = _SOURCE_VALUE.match(text)
        if found is None:
            raise ValueError(f"not a {SOURCE_HEADER} value: {text!r}")
        return cls(found["cluster"], found["topic"], int(found["partition"]), int(found["offset"]))


Headers = Sequence[tuple[str, str | bytes | None]]
"""A record's headers as the Kafka client gives them (values are bytes on records read)."""


def _pairs(headers: Headers | Mapping[str, str | bytes | None] | None) -> Iterable[tuple[str, str | bytes | None]]:
    if headers is None:
        return ()
    return headers.items() if isinstance(headers, Mapping) else headers


def header_value(headers: Headers | Mapping[str, str | bytes | None] | None, name: str) -> bytes | None:
    """The last value of header ``name`` (None if absent)."""
    value = None
    for key, raw in _pairs(headers):
        if key == name:
            value = raw.encode() if isinstance(raw, str) else raw
    return value


def source_position(headers: Headers | Mapping[str, str | bytes | None] | None) -> SourcePosition | None:
    """The ``gk.src`` of a record, if it has a valid one."""
    raw = header_value(headers, SOURCE_HEADER)
    if raw is None:
        return None
    try:
        return SourcePosition.decode(raw)
    except ValueError:
        return None


def user_headers(headers: list[tuple[str, bytes | None]] | None) -> list[tuple[str, bytes | None]]:
    """Headers without geokafka's provenance."""
    return [(k, v) for k, v in headers or () if k not in PROVENANCE_HEADERS]
