"""What every command shares: the topology file, the output mode, the console."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from geokafka.errors import TopologyError
from geokafka.secrets import redact
from geokafka.topology import Topology, load_topology


@dataclass
class CliContext:
    """Global options; the topology is loaded on first use so `--help` never reads it."""

    file: Path
    json_output: bool
    file_given: bool = True  # False: -f and GEOKAFKA_FILE were not given, ``file`` is the default
    # Piped output is not cut at 80 columns: tables stay readable in logs and CI.
    console: Console = field(default_factory=lambda: Console(
        stderr=False, highlight=False, width=None if sys.stdout.isatty() else 160))
    _topology: Topology | None = None

    @property
    def topology(self) -> Topology:
        """The validated topology file."""
        if self._topology is None:
            self._topology = load_topology(self.topology_file())
        return self._topology

    def topology_file(self) -> Path:
        """The topology file to read; without -f, ``./geokafka.yaml``, or a TopologyError saying where it looked.

        Relative paths are relative to the current directory (``./run`` runs commands in the
        directory it was called from).
        """
        if not self.file_given and not self.file.exists():
            raise TopologyError(
                f"{self.file.absolute()}: no topology file here: without -f FILE (or GEOKAFKA_FILE) geokafka "
                f"reads {self.file} in the current directory")
        return self.file

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
