"""What every command shares: the topology file, the output mode, the console."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from geokafka.secrets import redact
from geokafka.topology import Topology, load_topology


@dataclass
class CliContext:
    """Global options; the topology is loaded on first use so `--help` never reads it."""

    file: Path
    json_output: bool
    # Piped output is not cut at 80 columns: tables stay readable in logs and CI.
    console: Console = field(default_factory=lambda: Console(
        stderr=False, highlight=False, width=None if sys.stdout.isatty() else 160))
    _topology: Topology | None = None

    @property
    def topology(self) -> Topology:
        """The validated topology file."""
        if self._topology is None:
            self._topology = load_topology(self.file)
        return self._topology

    def emit(self, data: Any, render: Any = None) -> None:
        """Print ``data`` as JSON under ``--json``, else print ``render`` (a rich renderable or text).

        JSON may carry text from Kafka or Spark (error reasons): secrets read by this process are redacted.
        """
        if self.json_output:
            sys.stdout.write(redact(json.dumps(data, indent=2, default=str)) + "\n")
        elif render is not None:
            self.console.print(render)

    def info(self, message: str) -> None:
        """Progress text for people; silent under ``--json`` so stdout stays parseable."""
        if not self.json_output:
            self.console.print(message)


pass_ctx = click.make_pass_decorator(CliContext)
