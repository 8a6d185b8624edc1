"""The reference pages of the docs, generated from the code so that they cannot drift from it.

* :func:`cli_page`: every command, argument and option of the ``geokafka`` click tree;
* :func:`topology_page`: every key of the topology file from the pydantic schema
  (``geokafka/topology/schema.py``), with its type, default and description;
* :func:`metrics_page`: every Prometheus metric ``/metrics`` serves (``geokafka/monitoring/metrics.py``),
  read from the exposition itself, with its type, labels and help;
* :func:`exit_codes_page`: the exit codes of the error classes in ``geokafka/errors.py``.

Pure functions of what they are given; ``docs/hooks/reference_pages.py`` adds their pages to
the site as it is built, and ``tests/unit/test_docs_reference.py`` checks them.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

GENERATED = "<!-- generated from the code by docs/hooks/reference.py as the site is built: do not edit -->\n\n"


PATTERN_NAMES: dict[str, str] = {}
"""Regexes of the schema shown by a word (the hook fills it: the names' pattern -> "name")."""


class UndocumentedError(ValueError):
    """A key, command or option without a description: the reference would have a hole."""


# -- the CLI ---------------------------------------------------------------------------------


def _commands(group: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    yield group, ctx
    if isinstance(group, click.Group):
        for name in sorted(group.list_commands(ctx)):
            sub = group.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx))


def _help_markdown(text: str) -> str:
    """A click docstring as Markdown: ``\\b`` blocks (kept as written) become preformatted text."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for para in paragraphs:
        if para.startswith("\b"):
            out.append("```text\n" + para.removeprefix("\b").strip("\n") + "\n```")
        else:
            out.append(_escape(" ".join(line.strip() for line in para.splitlines())))
    return "\n\n".join(out)


def _escape(text: str) -> str:
    """Text for Markdown outside code: ``<time>`` would otherwise be taken for an HTML tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cell(text: str) -> str:
    return _escape(text).replace("|", "\\|").replace("\n", " ")


def _type_of(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    kind = param.type
    if isinstance(param, click.Argument):
        text = f"`{kind.name}`"
    elif isinstance(kind, click.Choice):
        text = " \\| ".join(f"`{choice}`" for choice in kind.choices)
    else:
        text = f"`{param.make_metavar(ctx)}`"
    extra = param.get_help_extra(ctx) if isinstance(param, click.Option) else {}
    if "range" in extra:
        text += f" ({extra['range']})"
    if param.multiple:
        text += ", repeatable"
    if isinstance(param, click.Argument) and param.nargs == -1:
        text += ", any number"
    return text


def _default_of(param: click.Parameter, ctx: click.Context) -> str:
    if param.required:
        return "required"
    default = param.get_default(ctx, call=False)
    if isinstance(param, click.Option) and param.is_flag:
        return "off" if not default else "on"
    if default is None or default == () or callable(default) or type(default).__name__ == "Sentinel":
        return ""  # none (click marks an unset default with a sentinel)
    return f"`{default}`"


def _option_row(param: click.Option, ctx: click.Context, where: str) -> str:
    if not param.help:
        raise UndocumentedError(f"{where}: option {'/'.join(param.opts)} has no help text")
    names = ", ".join(f"`{name}`" for name in param.opts + param.secondary_opts)
    envvar = f" (environment: `{param.envvar}`)" if isinstance(param.envvar, str) else ""
    return f"| {names} | {_type_of(param, ctx)} | {_default_of(param, ctx)} | {_cell(param.help)}{envvar} |"


def cli_page(cli: click.Group, name: str = "geokafka") -> str:
    """The CLI reference: one section per command (depth-first, alphabetical), its usage, help,
    arguments and options."""
    root = click.Context(cli, info_name=name)
    lines = [GENERATED, "# CLI reference", "",
             f"Every command of `{name}`, as `{name} COMMAND --help` prints it. Global options (`-f`, `--json`, "
             "`--log-level`) go before the command: `geokafka -f prod.yaml --json status`. Exit codes are on "
             "[Exit codes](exit-codes.md).", ""]
    for command, ctx in _commands(cli, root):
        path = ctx.command_path
        if not command.help:
            raise UndocumentedError(f"command {path!r} has no help text")
        usage = " ".join([path, *command.collect_usage_pieces(ctx)])
        lines += [f"## `{path}`", "", "```text", usage, "```", "", _help_markdown(command.help), ""]
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
        if arguments:
            lines += ["| argument | type | default |", "|---|---|---|"]
            lines += [f"| `{p.human_readable_name}` | {_type_of(p, ctx)} | {_default_of(p, ctx) or 'optional'} |"
                      for p in arguments]
            lines.append("")
        if options:
            lines += ["| option | type | default | what it does |", "|---|---|---|---|"]
            lines += [_option_row(p, ctx, path) for p in options]
            lines.append("")
        if isinstance(command, click.Group):
            subs = sorted(command.list_commands(ctx))
            lines += ["Commands: " + ", ".join(f"[`{sub}`](#{_anchor(f'{path} {sub}')})" for sub in subs), ""]
    return "\n".join(lines)


def _anchor(title: str) -> str:
    """The id Python-Markdown's toc gives a heading ``title`` (in backticks)."""
    return re.sub(r"[^\w\s-]", "", title).strip().lower().replace(" ", "-")


# -- the topology file ------------------------------------------------------------------------


def _type_text(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in args[1:]:
            for part in getattr(meta, "metadata", []):
                if getattr(part, "pattern", None) in PATTERN_NAMES:
                    return PATTERN_NAMES[part.pattern]
        bounds = [_bounds(meta) for meta in args[1:] if isinstance(meta, FieldInfo)]
        return _type_text(args[0]) + "".join(bounds)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_text(a) for a in args if a is not type(None)]
        return " \\| ".join(parts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return f"map of {_type_text(args[0])} to {_type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type):
        return {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "Path": "path"}.get(
            annotation.__name__, annotation.__name__)
    return str(annotation)


def _bounds(info: FieldInfo) -> str:
    marks = []
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"), ("max_length", "at most"),
                           ("pattern", "matches")):
            value = getattr(meta, attr, None)
            if attr == "pattern" and value in PATTERN_NAMES:
                marks.append(f"a {PATTERN_NAMES[value]}")
            elif value is not None:
                marks.append(f"{sign} `{value}`" if attr == "pattern" else f"{sign} {value:,}" if isinstance(
                    value, int) else f"{sign} {value}")
    return f" ({', '.join(marks)})" if marks else ""


def _default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    else:
        value = info.default
    if value is None or value is PydanticUndefined:
        return "-"
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value == {} or value == []:
        return "empty"
    return f"`{value}`"


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model its fields use, in the order they are first met."""
    seen: list[type[BaseModel]] = []

    def walk(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                seen.append(annotation)
                for info in annotation.model_fields.values():
                    walk(info.annotation)
            return
        for arg in typing.get_args(annotation):
            walk(arg)

    walk(root)
    return seen


def topology_page(root: type[BaseModel], path_of: dict[str, str] | None = None, limits: str = "") -> str:
    """The topology reference: one table per model of the schema (key, type, default, description).

    ``path_of`` names where each model sits in the file (``Flow`` -> ``flows.<name>``).
    Raises :class:`UndocumentedError` for a key without a description.
    """
    lines = [GENERATED, "# Topology file reference", "",
             "Every key of `geokafka.yaml`, as declared in `geokafka/topology/schema.py`. Unknown keys are refused, "
             "every error names file, line and key (`geokafka validate` lists them all). Secrets are never values: "
             "only `{env: VAR}` or `{file: PATH}` references. A name (of a cluster, flow or DC) is a letter or "
             "digit, then letters, digits, `_` or `-`, at most 40 characters." + (f" {limits}" if limits else ""), ""]
    for model in _models(root):
        where = (path_of or {}).get(model.__name__)
        doc = inspect.cleandoc(model.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        lines += [f"## {model.__name__}", ""]
        lines += [(f"At `{where}`. {doc}" if where.startswith(("clusters", "flows", "pipeline", "stretch")) else
                   f"{where[0].upper()}{where[1:]}. {doc}") if where else doc, ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for key, info in model.model_fields.items():
            if not info.description:
                raise UndocumentedError(f"{model.__name__}.{key} has no description in the schema")
            lines.append(f"| `{key}` | {_type_text(info.annotation)}{_bounds(info)} | {_default_text(info)} | "
                         f"{_cell(info.description)} |")
        lines.append("")
    return "\n".join(lines)


# -- metrics ----------------------------------------------------------------------------------


def metric_families(exposition: str) -> list[tuple[str, str, str, list[str], list[str]]]:
    """(family name, type, help, sample names, labels) of every family in a Prometheus exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for family in text_string_to_metric_families(exposition):
        samples = sorted({s.name for s in family.samples}) or [family.name]
        labels = sorted({label for s in family.samples for label in s.labels})
        out.append((family.name, family.type, family.documentation, samples, labels))
    return out


def metrics_page(exposition: str, states: tuple[str, ...]) -> str:
    """The metrics reference from ``/metrics``'s own output over a report that has every series."""
    lines = [GENERATED, "# Metrics reference", "",
             "Every metric `geokafka dashboard` serves on `/metrics` and `geokafka status --prometheus` prints "
             "(`geokafka/monitoring/metrics.py`). A value that is not known is left out, never reported as 0. "
             "What each means for an operator, and the alerts on them: [Metrics and alerts]"
             "(../operations/metrics.md).", "",
             "| metric | type | labels | help |", "|---|---|---|---|"]
    for name, kind, help_text, samples, labels in metric_families(exposition):
        shown = ", ".join(f"`{s}`" for s in samples)
        if not help_text:
            raise UndocumentedError(f"metric {name} has no help text")
        lines.append(f"| {shown} | {kind} | {', '.join(f'`{label}`' for label in labels)} | {_cell(help_text)} |")
    lines += ["", "`geokafka_flow_state` has one series per state, 1 for the current one: "
              + ", ".join(f"`{s}`" for s in states) + ".", ""]
    return "\n".join(lines)


# -- exit codes -------------------------------------------------------------------------------


def exit_codes_page(root: type[BaseException]) -> str:
    """Every error class under ``root`` with its exit code and docstring, depth-first."""
    lines = [GENERATED, "# Exit codes", "",
             "A command that fails prints one line, `Type: message`, on stderr and exits with its error's code "
             "(`geokafka/errors.py`); never a traceback (`GEOKAFKA_DEBUG=1` adds one for an internal error). "
             "Exit codes from 20 on are answers, not errors (below). Ctrl-C exits 130.", "",
             "| error | exit code | retriable | meaning |", "|---|---|---|---|"]

    def walk(cls: type[BaseException], depth: int) -> None:
        doc = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        if not doc:
            raise UndocumentedError(f"{cls.__name__} has no docstring")
        name = ("&nbsp;&nbsp;" * depth) + f"`{cls.__name__}`"
        retriable = "yes" if getattr(cls, "retriable", False) else "no"
        lines.append(f"| {name} | {getattr(cls, 'exit_code', '')} | {retriable} | {_cell(doc)} |")
        for sub in cls.__subclasses__():
            walk(sub, depth + 1)

    walk(root, 0)
    from geokafka.errors import ANSWERS

    lines += ["", "Answers, not errors:", "", "| exit code | meaning |", "|---|---|"]
    lines += [f"| {code} | {_cell(meaning)} |" for code, meaning in sorted(ANSWERS.items())]
    return "\n".join(lines) + "\n"
