"""A KRaft node's storage, formatted by Kafka's own tool once per kind of node and copied for the rest.

``kafka-storage format`` writes two files into a node's log directory: ``meta.properties`` (the node's
id, the cluster's id and a random directory id) and ``bootstrap.checkpoint`` (the cluster's initial
feature levels). For nodes of the same Kafka release and the same settings the checkpoint differs only
in its batch timestamps and their CRCs; each run of the tool is a JVM of its own (0.9 CPU s with the
class archive; the test suite formatted 75 nodes a run). So the first node of a kind is formatted by
the tool, its checkpoint is kept under ``~/.cache/geokafka/storage-formats/``, and the next node of
that kind gets a copy and a ``meta.properties`` of its own.

A node "of the same kind" has the same Kafka release and the same ``server.properties`` but for what
names the node itself (:data:`_NODE_OWN`). A format that adds SCRAM users is never copied: its salt is
random and its users are the cluster's own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from geokafka.artifacts import jars

CHECKPOINT = "bootstrap.checkpoint"
META = "meta.properties"

_NODE_OWN = frozenset({"node.id", "listeners", "advertised.listeners", "log.dirs", "broker.rack",
                       "controller.quorum.voters"})
"""Settings that name the node, its ports or its folders: they do not change what the tool writes into
the checkpoint (with ``controller.quorum.voters``, a static quorum, the voters are not in it)."""


def template_key(kafka_version: str, properties: dict[str, str]) -> str:
    """The kind of node ``properties`` (its ``server.properties``) describe, for Kafka ``kafka_version``."""
    digest = hashlib.sha256(kafka_version.encode())
    for name in sorted(properties):
        if name not in _NODE_OWN:
            digest.update(f"\0{name}={properties[name]}".encode())
    return digest.hexdigest()[:24]


def template_path(key: str) -> Path:
    """Where the checkpoint of nodes of kind ``key`` is kept."""
    return jars.cache_root().parent / "storage-formats" / f"{key}.checkpoint"


def keep_template(key: str, data_dir: Path) -> None:
    """Keep the checkpoint Kafka's tool just wrote into ``data_dir`` for the next node of kind ``key``."""
    target = template_path(key)
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    os.close(fd)
    shutil.copyfile(data_dir / CHECKPOINT, tmp)
    os.replace(tmp, target)  # whole or absent, also with several processes formatting at once


def format_from_template(key: str, data_dir: Path, node_id: int, cluster_id: str, directory_id: str) -> bool:
    """Format ``data_dir`` as Kafka's tool would from the kept checkpoint of kind ``key``; False when none is
    kept (the tool must run). ``meta.properties`` is written last and whole: a node whose folder has it is
    formatted."""
    template = template_path(key)
    if not template.exists():
        return False
    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, data_dir / CHECKPOINT)
    text = f"node.id={node_id}\ndirectory.id={directory_id}\nversion=1\ncluster.id={cluster_id}\n"
    tmp = data_dir / f".{META}.tmp"
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, data_dir / META)
    return True
