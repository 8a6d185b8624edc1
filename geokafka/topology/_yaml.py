"""Bounded YAML reading: a topology file is small, so anything huge or deep is refused early.

A 50 MB file took PyYAML's pure-Python loader a quarter of an hour and 50,000 nested ``[``
made its recursive composer raise RecursionError. Here the size is checked while reading (at
most ``MAX_FILE_BYTES + 1`` bytes are ever read), the nesting depth and the number of values
are counted on libyaml's event stream (no recursion, it stops at the first excess), and only
then is the document composed, with libyaml as well. PyYAML's pure-Python parser is asked
only to word a syntax error of a small file (its messages name the offending character or
alias; libyaml's do not).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from geokafka.topology.problems import Problem

MAX_FILE_BYTES = 1024 * 1024
"""Largest topology file read (1 MiB); real ones are a few KiB."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences (the schema itself needs 6)."""
MAX_VALUES = 50_000
"""Most YAML nodes (scalars, mappings, sequences, aliases) in one file; real files have hundreds."""
_WORDING_LIMIT = 64 * 1024
"""Files up to this size get PyYAML's pure-Python wording of a syntax error (well under a second)."""
_MIB = f"{MAX_FILE_BYTES // (1024 * 1024)} MiB"

_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bounded(path: Path) -> str | Problem:
    """The text of ``path``, or the problem that keeps it from being read (never more than the limit)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        looked = "" if path.is_absolute() else f" (looked for {path.absolute()})"
        return Problem(str(path), "", f"topology file not found{looked}")
    except OSError as exc:
        return Problem(str(path), "", f"cannot read: {exc.strerror}")
    if len(data) > MAX_FILE_BYTES:
        return Problem(str(path), "", f"{_size_of(path)} is more than a topology file may have ({_MIB})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return Problem(f"{path}:{line}", "", f"not UTF-8 text (byte {exc.start})")


def compose_bounded(text: str, source: str) -> yaml.Node | None | Problem:
    """The YAML node tree of ``text`` (None when empty), or why it is too large, too deep or not YAML."""
    if len(text) > MAX_FILE_BYTES and len(text.encode("utf-8")) > MAX_FILE_BYTES:
        size = len(text.encode("utf-8"))
        return Problem(source, "", f"{size:,} bytes is more than a topology file may have ({_MIB})")
    try:
        excess = _shape_excess(text, source)
        if excess is not None:
            return excess
        loader = _FAST_LOADER(text)
        try:
            return loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        return _syntax_error(exc, text, source)


def construct(node: yaml.Node | None) -> Any:
    """The Python data of a composed (bounded) node tree; merge keys (``<<``) are merged into it."""
    if node is None:
        return None
    loader = _FAST_LOADER("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _shape_excess(text: str, source: str) -> Problem | None:
    """Count depth and values on the event stream; stop at the first excess."""
    depth = values = 0
    for event in yaml.parse(text, Loader=_FAST_LOADER):
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            values += 1
            if depth > MAX_DEPTH:
                return Problem(f"{source}:{line}", "",
                               f"nested more than {MAX_DEPTH} levels deep (a topology needs fewer than 10)")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            values += 1
        if values > MAX_VALUES:
            return Problem(f"{source}:{line}", "",
                           f"more than {MAX_VALUES:,} values (a topology has hundreds)")
    return None


def _syntax_error(exc: yaml.YAMLError, text: str, source: str) -> Problem:
    if len(text) <= _WORDING_LIMIT:
        # PyYAML's own parser names the character or alias at fault; it is iterative, and the
        # file is small, so this stays fast. Its words are used when it finds the same line.
        try:
            for _ in yaml.parse(text, Loader=yaml.SafeLoader):
                pass
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as worded:
            if _line(worded) == _line(exc):
                exc = worded
        except RecursionError:  # the parsers disagree and the composer went deep: keep libyaml's words
            pass
    line = _line(exc)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return Problem(f"{source}:{line}" if line is not None else source, "", f"invalid YAML: {problem}")


def _line(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    return mark.line + 1 if mark is not None else None


def _size_of(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return f"{size:,} bytes" if size > MAX_FILE_BYTES else f"over {MAX_FILE_BYTES:,} bytes"
