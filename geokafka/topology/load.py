"""Read a topology file and turn every problem into one line: file, line, key path, what.

:func:`check_topology_file` finds every problem (``geokafka validate``); :func:`load_topology`
refuses the first, naming how many more there are (every other command).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from geokafka.errors import TopologyError
from geokafka.topology._yaml import compose_bounded, construct, read_bounded
from geokafka.topology.checks import topology_findings
from geokafka.topology.problems import Problem
from geokafka.topology.schema import Topology

DEFAULT_FILE = Path("geokafka.yaml")


@dataclass(frozen=True)
class CheckedTopology:
    """A topology file's problems, all of them, and the topology when the schema accepted it."""

    source: str
    problems: tuple[Problem, ...] = ()
    topology: Topology | None = field(default=None, compare=False)

    @property
    def valid(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    def raise_first(self) -> Topology:
        """The topology; :class:`TopologyError` with the first problem (and the count of the rest) otherwise."""
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise TopologyError(f"{self.problems[0]}{more}")
        assert self.topology is not None
        return self.topology


def load_topology(path: Path | str = DEFAULT_FILE) -> Topology:
    """Parse and validate ``path``; raise :class:`TopologyError` with a one-line message."""
    return check_topology_file(path).raise_first()


def parse_topology(text: str, source: str = "<topology>") -> Topology:
    """Validate topology ``text``; ``source`` names it in errors."""
    return check_topology_text(text, source).raise_first()


def check_topology_file(path: Path | str) -> CheckedTopology:
    """Every problem of the file at ``path``; one problem when it cannot be read or parsed at all."""
    path = Path(path)
    text = read_bounded(path)
    if isinstance(text, Problem):
        return CheckedTopology(str(path), (text,))
    return check_topology_text(text, str(path))


def check_topology_text(text: str, source: str = "<topology>") -> CheckedTopology:
    """Every problem of topology ``text``: YAML, duplicate keys, schema, then cross-key rules."""
    node = compose_bounded(text, source)
    if isinstance(node, Problem):
        return CheckedTopology(source, (node,))
    if not isinstance(node, yaml.MappingNode):
        what = "expected a mapping at the top level (clusters:, flows:, stretch:, ...)"
        return CheckedTopology(source, (Problem(source, "", what),))
    # before construct(), which merges `<<:` keys into the nodes themselves
    problems = [Problem(f"{source}:{line}", ".".join(key_path), f"duplicate key (first on line {first})")
                for key_path, line, first in _duplicate_keys(node, ())]
    try:
        data = construct(node)
    except yaml.YAMLError as exc:  # e.g. a value of an unknown tag (!!python/object)
        line = _line_of_mark(exc)
        what = f"invalid YAML: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
        return CheckedTopology(source, (*problems, Problem(f"{source}:{line}" if line else source, "", what)))
    try:
        topology = Topology.model_validate(data)
    except ValidationError as exc:
        return CheckedTopology(source, tuple(problems + _schema_problems(exc, node, source)))
    problems += [_problem(node, source, key_path, what) for key_path, what in topology_findings(topology)]
    return CheckedTopology(source, tuple(problems), topology)


def _problem(node: yaml.Node | None, source: str, key_path: tuple[str, ...], what: str) -> Problem:
    line = _line_of(node, key_path)
    return Problem(f"{source}:{line}" if line is not None else source, ".".join(key_path) or "(top level)", what)


def _duplicate_keys(node: yaml.Node | None, key_path: tuple[str, ...],
                    seen: set[int] | None = None) -> list[tuple[tuple[str, ...], int, int]]:
    """Keys given twice in one mapping (YAML keeps the last one silently), in file order.

    Recursive: the nesting depth was bounded before the file was composed.
    """
    seen = set() if seen is None else seen
    if node is None or id(node) in seen:
        return []
    seen.add(id(node))
    found: list[tuple[tuple[str, ...], int, int]] = []
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            if name in lines and key.tag != "tag:yaml.org,2002:merge":
                found.append(((*key_path, name), key.start_mark.line + 1, lines[name]))
            lines.setdefault(name, key.start_mark.line + 1)
            found += _duplicate_keys(value, (*key_path, name), seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _duplicate_keys(item, (*key_path, str(index)), seen)
    return found


def _schema_problems(exc: ValidationError, node: yaml.Node | None, source: str) -> list[Problem]:
    """Every schema error; the keys the user typed that the schema does not know come first."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    problems = []
    for error in errors:
        key_path = tuple(str(part) for part in error["loc"] if part != "[key]")
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key" + _did_you_mean(key_path)
        elif error["type"] == "missing":
            message = "required key is missing"
        problems.append(_problem(node, source, key_path, message))
    return problems


def _did_you_mean(key_path: tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` with the closest key the schema accepts at that place, or nothing."""
    model = _model_at(key_path[:-1])
    if model is None or not key_path:
        return ""
    close = difflib.get_close_matches(key_path[-1], list(model.model_fields), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(key_path: tuple[str, ...]) -> type[BaseModel] | None:
    """The schema model that describes the mapping at ``key_path``, if one does."""
    kind: Any = Topology
    for part in key_path:
        kind = _unwrapped(kind)
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field_info = kind.model_fields.get(part)
            if field_info is None:
                return None
            kind = field_info.annotation
        elif get_origin(kind) is dict:
            kind = get_args(kind)[1]
        elif get_origin(kind) is list:
            kind = get_args(kind)[0]
        else:
            return None
    kind = _unwrapped(kind)
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _unwrapped(kind: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            kind = get_args(kind)[0]
        elif origin in (Union, UnionType):
            options = [a for a in get_args(kind) if a is not type(None)]
            if len(options) != 1:
                return kind
            kind = options[0]
        else:
            return kind


def _line_of(node: yaml.Node | None, key_path: tuple[str, ...]) -> int | None:
    """Line of the deepest node of ``key_path`` that exists in the YAML."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in key_path:
        if isinstance(node, yaml.MappingNode):
            match = next((kv for kv in node.value if str(kv[0].value) == part), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _line_of_mark(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    return mark.line + 1 if mark is not None else None
