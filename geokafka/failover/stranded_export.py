"""`reconcile --export DIR`: the stranded records in a file, one JSON object a line.

Each line holds one record as it is at the old source: ``topic``, ``partition``, ``offset``,
``timestamp`` (ms, or null), ``key`` and ``value`` (base64, or null), ``headers`` (a list of
``[name, base64 value or null]``). The file is ``<flow>-stranded-<failover time, UTC>.jsonl``:
written under a temporary name in the same directory, synced, then linked to its name, which
fails if that name exists, so an export is whole or absent and never overwrites a file. Past
``max_bytes`` the export stops, removes what it wrote and says so.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from geokafka.errors import OutputError
from geokafka.failover.stranded import headers_of, timestamp_of

DEFAULT_MAX_BYTES = 1 << 30
"""An export larger than this (1 GiB) is refused unless a larger limit is given."""


@dataclass(frozen=True)
class ExportResult:
    """What was written where."""

    path: str
    records: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"path": self.path, "records": self.records, "bytes": self.bytes}


def export_path(directory: Path, flow: str, failover_at_ms: int) -> Path:
    """Where the export of a failover's stranded records goes; an OutputError when it cannot (pure checks
    plus a look at the directory: it must be a directory, and the file must not exist yet)."""
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--export {directory}: not a directory; nothing was written")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(failover_at_ms / 1000))
    path = directory / f"{flow}-stranded-{stamp}.jsonl"
    if path.exists():
        raise OutputError(f"--export: {path} exists and an export never overwrites a file (move it away or "
                          "export to another directory); nothing was written")
    return path


def record_line(msg: Message) -> bytes:
    """One record as a JSON line (binary fields base64)."""

    def b64(raw: bytes | str | None) -> str | None:
        if raw is None:
            return None
        return base64.b64encode(raw.encode() if isinstance(raw, str) else raw).decode("ascii")

    line = {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(), "timestamp": timestamp_of(msg),
            "key": b64(msg.key()), "value": b64(msg.value()),
            "headers": [[name, b64(value)] for name, value in headers_of(msg)]}
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def write_export(path: Path, records: Iterable[Message], max_bytes: int = DEFAULT_MAX_BYTES) -> ExportResult:
    """Write ``records`` to ``path`` atomically, refusing to pass ``max_bytes`` or to overwrite ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = size = 0
    try:
        with open(temp, "xb") as out:
            for msg in records:
                line = record_line(msg)
                size += len(line)
                if size > max_bytes:
                    raise OutputError(f"--export: the stranded records take more than --max-export-bytes "
                                      f"({max_bytes:,} bytes) after {count:,} records; nothing was written "
                                      "(raise the limit)")
                out.write(line)
                count += 1
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)  # unlike a rename, fails when the name exists
        except FileExistsError:
            raise OutputError(f"--export: {path} appeared meanwhile and is never overwritten; nothing was written") from None
        _sync_directory(path.parent)
    except OSError as exc:
        raise OutputError(f"--export: {path} cannot be written: {exc.strerror or exc}; nothing was written") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    return ExportResult(str(path), count, size)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
