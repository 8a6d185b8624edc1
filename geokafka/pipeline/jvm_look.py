"""A running flow's looks at its clusters from Spark's JVM (``io.geokafka.spark.ClusterLook``), once the flow has one:
the source's topic IDs, and the topic configs of the source and of the target.

The re-created-topic watch asks the source for every replicated topic's ID (KIP-516) every second, and the config
sync asks both sides for every replicated topic's configs every ``sync_interval_s``. Through librdkafka's Python
client each answer becomes Python objects (a description of every partition, its leader and replicas; a future per
topic and an entry object per config), which at 200 topics of 10 partitions cost 27-35 ms of CPU for the IDs and
about 43 ms for one side's configs; a Java admin client in the driver's JVM takes a few ms, and the topics and the
answers cross py4j as one string each way.

:class:`JvmClusterLook` answers as :class:`geokafka.control.admin.ClusterAdmin` does (``topic_ids``: the IDs in the
same text, topics that do not exist left out; ``many_topic_configs``: the configs set on each topic itself) and
raises the same :class:`~geokafka.errors.GeokafkaError` classes, decided by the JVM's typed failure, never by text.
A call that Spark's JVM does not answer at all (py4j's connection gone) is asked of the librdkafka client instead: a
JVM going away is not a failed look at the cluster.

The source observation (end offsets) stays on the librdkafka client: a look at a killed broker fails there at once
on the refused connection, while a Java consumer retries until its time-out, and the RPO bound after a site's death
is as old as the last look that answered (see the benchmark history, 2026-12-02).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from geokafka import errors
from geokafka.control.connection import ClusterConnection
from geokafka.control.topic_sync import TopicConfigLook
from geokafka.pipeline.failures import classify


class ClusterLook(TopicConfigLook, Protocol):
    """Where the topic-ID watch and the config sync (``many_topic_configs``) ask: the librdkafka
    :class:`~geokafka.control.admin.ClusterAdmin` or a :class:`JvmClusterLook`, which answer alike."""

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        """topic -> its topic ID; topics that do not exist are left out."""

    def background_cpu_s(self) -> float:
        """CPU seconds spent answering beyond the calling thread's own."""


class JvmClusterLook:
    """The looks of one flow at ``conn``'s cluster through a ``ClusterLook`` in the JVM of ``spark`` (``fallback``
    answers when the JVM does not); topic IDs within ``timeout_s``, topic configs within ``configs_timeout_s`` (the
    same by default). Close it with the flow's clients (:meth:`~geokafka.pipeline.flow_clients.FlowClients.register`)."""

    def __init__(self, spark: Any, conn: ClusterConnection, timeout_s: float, fallback: ClusterLook,
                 configs_timeout_s: float | None = None) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        self.configs_timeout_s = timeout_s if configs_timeout_s is None else configs_timeout_s
        self.fallback = fallback
        self._closed = threading.Event()
        self._jvm = spark.sparkContext._jvm
        self._look = self._jvm.io.geokafka.spark.ClusterLook(conn.java_client())  # py4j's error if it cannot open

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        """topic -> its topic ID, as :meth:`ClusterAdmin.topic_ids` writes it; topics that do not exist are left out."""
        if not topics:
            return {}
        text = self._ask(lambda request: self._look.topicIds(request, int(1000 * self.timeout_s)), topics,
                         "describing topics")
        if text is None:
            return self.fallback.topic_ids(topics)
        return dict(line.split("\t", 1) for line in text.splitlines() if line)

    def many_topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """topic -> the configs set on the topic itself, as :meth:`ClusterAdmin.many_topic_configs` answers; a topic
        that does not exist fails the look."""
        if not topics:
            return {}
        text = self._ask(lambda request: self._look.topicConfigs(request, int(1000 * self.configs_timeout_s)), topics,
                         "describing topic configs")
        if text is None:
            return self.fallback.many_topic_configs(topics)
        return config_text(text)

    def _ask(self, call: Callable[[str], Any], topics: Sequence[str], what: str) -> str | None:
        """``call``'s answer to ``topics`` (each once, one a line), or None when the JVM does not answer at all; a
        failure the JVM threw is raised as its typed error, saying ``what``."""
        try:
            return str(call("\n".join(sorted(set(topics)))))
        except Exception as exc:  # noqa: BLE001 - py4j's error, typed by the JVM's failure below
            if _unanswered(exc):
                return None
            raise self._error(exc, what) from None

    def background_cpu_s(self) -> float:
        """CPU seconds the JVM's threads spent answering this look's calls, and the fallback's (a job's cost beyond
        its own thread's)."""
        jvm = 0.0
        if not self._closed.is_set():
            try:
                jvm = float(self._look.cpuSeconds())
            except Exception:  # noqa: BLE001 - a JVM that is gone has no cost to add
                jvm = 0.0
        return jvm + self.fallback.background_cpu_s()

    def close(self) -> None:
        """Close the JVM's admin client (a JVM that is gone closed it)."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._look.close()
        except Exception:  # noqa: BLE001 - the JVM may be gone at exit
            pass

    def _error(self, exc: Exception, what: str) -> errors.GeokafkaError:
        java = getattr(exc, "java_exception", None)
        try:
            typed = self._jvm.io.geokafka.spark.SinkRegistry.typedFailure(java)
        except Exception:  # noqa: BLE001 - the failure's type stays unknown: a Kafka failure
            typed = None
        found = classify(java, dict(typed) if typed is not None else None, self._jvm)
        return type(found)(f"cluster {self.conn.name}: {what}: {found}", kafka_code=found.kafka_code,
                           retriable=found.retriable)


def config_text(text: str) -> dict[str, dict[str, str]]:
    """topic -> configs from the text ``ClusterLook.topicConfigs`` writes: each topic on a line, then a
    ``TAB name TAB value`` line for each of its configs, a tab, a line break or a backslash in a value escaped."""
    out: dict[str, dict[str, str]] = {}
    configs: dict[str, str] = {}
    for line in text.split("\n"):
        if line.startswith("\t"):
            name, value = line[1:].split("\t", 1)
            configs[name] = _ESCAPED.sub(lambda m: _UNESCAPE[m.group(0)], value)
        elif line:
            configs = out.setdefault(line, {})
    return out


_UNESCAPE = {"\\t": "\t", "\\n": "\n", "\\\\": "\\"}
_ESCAPED = re.compile(r"\\[tn\\]")


def _unanswered(exc: BaseException) -> bool:
    """The JVM gave no answer at all (no Java exception came back): it is gone, or py4j's connection is."""
    return getattr(exc, "java_exception", None) is None
