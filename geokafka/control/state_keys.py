"""Names in ``__geokafka_state`` that Spark's Python workers need too.

Kept apart from :mod:`geokafka.control.state_store` so the writer, which runs in every
Python worker, does not import the control plane (pydantic topology, admin client) to learn
two names: that import cost seconds per new worker on a loaded machine.
"""

from __future__ import annotations

STATE_TOPIC = "__geokafka_state"


def progress_key(flow: str, topic: str, partition: int) -> str:
    """Key of the progress of one source partition of a flow."""
    return f"progress/{flow}/{topic}/{partition}"
