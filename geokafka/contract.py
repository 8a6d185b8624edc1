"""The Python-Java contract: names both the driver and the JVM source and sink read or write.

``contract.json`` (next to this module) declares them once: the state topic, the progress
records' keys and fields (one partition's, and a partition group's packed one), the provenance
headers, the transactional ids, the commit summary fields, the failure kinds, the partition key
(a source partition in the sink's options), the option names and each option's value shape. The
jvm module's build copies the same file into its jar, where ``Contract.java`` loads it; each side
has a test that fails when its code drifts from the file (``tests/unit/test_contract.py``,
``jvm/src/test/.../ContractTest.java``).

Standard library only: cheap to import anywhere.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

CONTRACT_FILE = Path(__file__).with_name("contract.json")


@cache
def spec() -> dict[str, Any]:
    """The whole contract, as declared."""
    loaded: dict[str, Any] = json.loads(CONTRACT_FILE.read_text(encoding="utf-8"))
    return loaded


def name(section: str, role: str) -> str:
    """The wire name of ``role`` in ``section`` (e.g. ``name("commit_summary", "next_offset")``)."""
    return str(spec()[section][role])


STATE_TOPIC: str = spec()["state_topic"]
PROGRESS_KEY: str = spec()["progress"]["key"]
PACKED_PROGRESS_KEY: str = spec()["packed_progress"]["key"]
ORIGIN_HEADER: str = spec()["headers"]["origin"]
SOURCE_HEADER: str = spec()["headers"]["source"]
SOURCE_HEADER_VALUE: str = spec()["headers"]["source_value"]
FAILURE_KINDS: tuple[str, ...] = tuple(spec()["failure"]["kinds"])
PARTITION_KEY: str = spec()["partition_key"]
WRITER_COMPRESSION: str = spec()["writer_compression"]
"""The writer's compression.type when neither the flow nor the pipeline's producer_config names one."""


def progress_key(flow: str, topic: str, partition: int) -> str:
    """Key of one source partition's progress record."""
    return PROGRESS_KEY.format(flow=flow, topic=topic, partition=partition)


def packed_progress_key(flow: str, generation: int, group: int, slot: str) -> str:
    """Key of one slot of a partition group's packed progress record."""
    return PACKED_PROGRESS_KEY.format(flow=flow, generation=generation, group=group, slot=slot)


def transactional_id_prefix(flow: str) -> str:
    """Every transactional id of a flow starts with this (what a PREFIXED ACL grants)."""
    return str(spec()["transactional_id"]["prefix"]).format(flow=flow)


def group_transactional_id(flow: str, generation: int, group: int) -> str:
    """The transactional id of one partition group of a flow's generation: one writer at a time."""
    return str(spec()["transactional_id"]["group"]).format(flow=flow, generation=generation, group=group)


def legacy_transactional_id(flow: str, topic: str, partition: int) -> str:
    """The id of one source partition's writer before partition groups (fenced once, on upgrade)."""
    return str(spec()["transactional_id"]["legacy_partition"]).format(flow=flow, topic=topic, partition=partition)


def partition_key(topic: str, partition: int) -> str:
    """A source partition's key in the sink's options (``expected``) and the commit hand-over."""
    return PARTITION_KEY.format(topic=topic, partition=partition)


_KEY_PREFIX, _KEY_REST = PARTITION_KEY.split("{topic}", 1)
_KEY_SEPARATOR, _KEY_SUFFIX = _KEY_REST.split("{partition}", 1)


def parse_partition_key(key: str) -> tuple[str, int]:
    """The source topic and partition a :func:`partition_key` names (``ValueError`` for anything else).

    Read for every progress record of a state topic (a million on a large one): the format's parts are split once."""
    if not _KEY_SEPARATOR or not key.startswith(_KEY_PREFIX) or not key.endswith(_KEY_SUFFIX):
        raise ValueError(f"not a partition key ({PARTITION_KEY}): {key!r}")
    topic, found, partition = key[len(_KEY_PREFIX):len(key) - len(_KEY_SUFFIX)].rpartition(_KEY_SEPARATOR)
    if not found or not topic or not partition.isdigit():
        raise ValueError(f"not a partition key ({PARTITION_KEY}): {key!r}")
    return topic, int(partition)


def option_shape(section: str, role: str) -> str:
    """The shape of an option's value (``option_shape("sink_options", "generation")`` is ``"long"``)."""
    return str(spec()["option_shapes"][section][role])
