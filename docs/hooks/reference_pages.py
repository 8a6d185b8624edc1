"""MkDocs hook: adds the generated reference pages (docs/hooks/reference.py) to the site as it is built.

The pages exist only in the built site: the code is their source, so they cannot drift from it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference  # next to this file, found through the path above

WHERE = {"Cluster": "clusters.<name>", "LocalCluster": "clusters.<name>.local", "Security": "clusters.<name>.security",
         "SecretRef": "clusters.<name>.security.password (and key_password)", "Flow": "flows.<name>",
         "Transform": "flows.<name>.transform", "Pipeline": "pipeline", "Stretch": "stretch",
         "StretchDC": "stretch.dcs.<name>", "StretchTopic": "stretch.topics.<name>", "StretchGuard": "stretch.guard",
         "Topology": "the top level of the file"}
"""Where each model of the schema sits in the file."""


def full_report() -> Any:
    """A status report with every series ``/metrics`` can serve (guard included), to read the exposition from."""
    from geokafka.guard.summary import GuardStatus
    from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, Throughput

    part = PartitionStatus("orders", 0, "nyc.orders", 120, 100, 20, 1.5, lost_records=3)
    flow = FlowStatus("nyc-to-atl", "nyc", "atl", "running", "running", heartbeat_age_s=1.0, written=100, bytes=10_000,
                      partitions=[part], rpo=Rpo(20, 1.5, "live"), throughput=Throughput(60.0, 5.0, 500.0, 5.0, "live"))
    guard = GuardStatus("nyc", lowered=[{"topic": "orders", "dc": "dc1", "original": 3, "lowered": 2, "at_ms": 0}],
                        actions={"lower-min-isr/done": 1})
    return StatusReport(0, [flow], guard)


def pages() -> dict[str, str]:
    """Path under docs/ -> Markdown of every generated page."""
    from geokafka.cli.main import cli
    from geokafka.errors import GeokafkaError
    from geokafka.monitoring.metrics import STATES, render_metrics
    from geokafka.topology import _yaml, schema
    from geokafka.topology.schema import Topology

    reference.PATTERN_NAMES[schema._NAME] = "name"
    return {
        "reference/cli.md": reference.cli_page(cli),
        "reference/topology.md": reference.topology_page(
            Topology, WHERE, f"A file is at most {_yaml.MAX_FILE_BYTES // 1024 // 1024} MiB, {_yaml.MAX_DEPTH} levels deep "
                             f"and {_yaml.MAX_VALUES:,} values."),
        "reference/metrics.md": reference.metrics_page(render_metrics(full_report()), STATES),
        "reference/exit-codes.md": reference.exit_codes_page(GeokafkaError),
    }


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site's files (MkDocs calls this before it builds the nav)."""
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files
