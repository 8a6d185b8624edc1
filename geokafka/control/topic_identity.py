"""Which incarnation of a source topic a flow replicates: its topic ID, kept next to the progress.

A topic deleted and re-created under the same name starts its offsets again, so progress
("replicated up to offset 100") no longer means anything for it, and comparing log lengths
cannot tell when the new log is longer. Kafka gives every topic an ID (KIP-516) that a
re-creation changes. The flow's first start records each source topic's ID on the target
(a :class:`~geokafka.control.state_records.TopicId`); every later start, and the running
mirror every few seconds, compares it with the source's current ID.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Recreation:
    """A source topic whose ID changed (or that is gone) since the flow started replicating it."""

    topic: str
    replicated_id: str
    current_id: str | None
    """None: the topic does not exist now."""

    def describe(self) -> str:
        """Why its old offsets mean nothing now."""
        if self.current_id is None:
            return f"topic deleted (topic id {self.replicated_id})"
        return f"topic deleted and re-created (topic id {self.replicated_id} -> {self.current_id})"


def recreations(stored: Mapping[str, str], current: Mapping[str, str], replicated: set[str],
                include_deleted: bool = False) -> list[Recreation]:
    """Topics with progress (``replicated``) whose current ID differs from the recorded one (pure);
    with ``include_deleted``, also those that no longer exist."""
    out = []
    for topic in sorted(replicated):
        if topic not in stored:
            continue
        now = current.get(topic)
        if now is None and include_deleted:
            out.append(Recreation(topic, stored[topic], None))
        elif now is not None and now != stored[topic]:
            out.append(Recreation(topic, stored[topic], now))
    return out
