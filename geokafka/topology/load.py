"""Read a topology file and turn every problem into one line: file, line, key path, what."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from geokafka.errors import TopologyError
from geokafka.topology.ports import local_ports
from geokafka.topology.schema import Topology

DEFAULT_FILE = Path("geokafka.yaml")


def load_topology(path: Path | str = DEFAULT_FILE) -> Topology:
    """Parse and validate ``path``; raise :class:`TopologyError` with a one-line message."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TopologyError(f"{path}: topology file not found") from None
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise TopologyError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None
    return parse_topology(text, str(path))


def parse_topology(text: str, source: str = "<topology>") -> Topology:
    """Validate topology ``text``; ``source`` names it in errors."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TopologyError(f"{where}: invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise TopologyError(f"{source}: expected a mapping at the top level (clusters:, flows:, ...)")
    duplicate = _first_duplicate_key(node, ())
    if duplicate is not None:
        key_path, line, first_line = duplicate
        raise TopologyError(f"{source}:{line}: {'.'.join(key_path)}: duplicate key (first on line {first_line})")
    try:
        topology = Topology.model_validate(data)
    except ValidationError as exc:
        raise TopologyError(_first_error(exc, node, source)) from None
    problems = cross_reference_errors(topology)
    if problems:
        key_path, message = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TopologyError(f"{_where(node, key_path, source)}: {'.'.join(key_path)}: {message}{more}")
    return topology


def cross_reference_errors(topology: Topology) -> list[tuple[tuple[str, ...], str]]:
    """Problems that span several keys: unknown clusters, duplicate ports."""
    problems: list[tuple[tuple[str, ...], str]] = []
    for name, flow in topology.flows.items():
        for role in ("source", "target"):
            ref = getattr(flow, role)
            if ref not in topology.clusters:
                problems.append((("flows", name, role), f"unknown cluster {ref!r}"))
            elif flow.rename == "prefix" and flow.separator in ref:
                problems.append((
                    ("flows", name, "separator"),
                    f"separator {flow.separator!r} occurs in cluster name {ref!r}, so prefixed names are ambiguous",
                ))
    owner: dict[int, str] = {}
    for name, cluster in topology.clusters.items():
        if cluster.local is None:
            continue
        if max(local_ports(cluster)) > 65535:
            problems.append((("clusters", name, "local"), f"ports run up to {max(local_ports(cluster))}, above 65535"))
            continue
        for port in local_ports(cluster):
            if port in owner:
                problems.append(
                    (("clusters", name, "local"), f"port {port} is also used by cluster {owner[port]!r}")
                )
                break
            owner[port] = name
    return problems


def _first_duplicate_key(
    node: yaml.Node | None, key_path: tuple[str, ...], seen: set[int] | None = None
) -> tuple[tuple[str, ...], int, int] | None:
    """The first key given twice in one mapping (YAML keeps the last one silently)."""
    seen = set() if seen is None else seen
    if node is None or id(node) in seen:
        return None
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            if name in lines and key.tag != "tag:yaml.org,2002:merge":
                return (*key_path, name), key.start_mark.line + 1, lines[name]
            lines.setdefault(name, key.start_mark.line + 1)
            found = _first_duplicate_key(value, (*key_path, name), seen)
            if found is not None:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found = _first_duplicate_key(item, (*key_path, str(index)), seen)
            if found is not None:
                return found
    return None


def _first_error(exc: ValidationError, node: yaml.Node | None, source: str) -> str:
    errors = exc.errors()
    first = errors[0]
    key_path = tuple(str(part) for part in first["loc"] if part != "[key]")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif first["type"] == "missing":
        message = "required key is missing"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    shown = ".".join(key_path) or "(top level)"
    return f"{_where(node, key_path, source)}: {shown}: {message}{more}"


def _where(node: yaml.Node | None, key_path: tuple[str, ...], source: str) -> str:
    """``file:line`` of the deepest node of ``key_path`` that exists in the YAML."""
    line = _line_of(node, key_path)
    return f"{source}:{line}" if line is not None else source


def _line_of(node: yaml.Node | None, key_path: tuple[str, ...]) -> int | None:
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


