"""Every `geokafka` command the README and the docs show parses as written: its command exists and its
options and arguments are the command's (runbook commands that failed as written were found by hand before)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from geokafka.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts)]
_COMMAND = re.compile(r"^(?:\$ )?(geokafka(?:\s.*)?)$")
_INLINE = re.compile(r"`(geokafka [^`]+)`")


def shown_commands(page: Path) -> list[tuple[int, str]]:
    """(line number, command) of every `geokafka ...` line in a fenced or indented code block of ``page``, and of
    every inline code span that holds one."""
    out, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        found = _COMMAND.match(stripped) if fenced or line.startswith("    ") else None
        # inline: invocations, not a command named in prose (`geokafka reconcile`) or a form with placeholders
        inline = [] if fenced or found else [t for t in _INLINE.findall(line)
                                             if len(t.split()) > 2 and not any(w.isupper() for w in t.split())]
        for text in [found.group(1)] if found else inline:
            command = text.split("  #")[0].split(" # ")[0].strip()
            if "..." not in command and "<" not in command and "[" not in command:
                out.append((number, command))
    return out


def parse(args: list[str]) -> None:
    """Parse ``args`` as `geokafka` would, down to the leaf command, without running anything."""
    group: click.Group = cli
    ctx = group.make_context("geokafka", args)
    rest = _unparsed(ctx)
    while True:
        name, command, rest = group.resolve_command(ctx, rest)
        assert command is not None, f"no command {name!r}"
        ctx = command.make_context(name or "", rest, parent=ctx)
        if not isinstance(command, click.Group):
            return
        group, rest = command, _unparsed(ctx)


def _unparsed(ctx: click.Context) -> list[str]:
    """A group's arguments left for its sub-command (click keeps the sub-command's name apart until 9.0)."""
    return [*getattr(ctx, "_protected_args", []), *ctx.args]


CASES = [(page, number, command) for page in PAGES for number, command in shown_commands(page)]


def test_the_pages_show_commands() -> None:
    runbooks = [c for c in CASES if "runbooks" in c[0].parts]
    assert len(runbooks) >= 20 and any(c[0].name == "README.md" for c in CASES)


@pytest.mark.parametrize(("page", "number", "command"), CASES,
                         ids=[f"{p.relative_to(ROOT)}:{n}" for p, n, _ in CASES])
def test_every_command_shown_parses(page: Path, number: int, command: str) -> None:
    args = shlex.split(command)[1:]
    try:
        parse(args)
    except click.exceptions.Exit:
        pass  # --help, --version
    except click.UsageError as exc:
        pytest.fail(f"{page.relative_to(ROOT)}:{number}: `{command}`: {exc.format_message()}")
