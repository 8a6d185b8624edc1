"""Why a flow's query stopped, as the geokafka error it stands for: decided by type, never by text.

geokafka's source and sink (``jvm/``) fail with a typed ``GeokafkaException`` (a kind, the Kafka
error code and whether a restart can help; ``DATA_LOSS`` when source records are gone), Kafka's
client with its exception classes, Spark with its own; a JVM error (``OutOfMemoryError``) anywhere
in the chain is ``JVM_FATAL``. The kinds and fields are the Python-Java contract's. The Java
exception's cause chain is walked through py4j to find them; the message shown is the one of the
exception found, secrets redacted.
"""

from __future__ import annotations

from typing import Any

from geokafka import contract, errors
from geokafka.secrets import redact

KINDS: dict[str, type[errors.GeokafkaError]] = {
    "RECORD_TOO_LARGE": errors.RecordTooLargeError,
    "DATA_LOSS": errors.DataLossError,
    "AUTH": errors.AuthError,
    "FENCED": errors.KafkaOperationError,
    "KAFKA": errors.KafkaOperationError,
    "JVM_FATAL": errors.JvmFatalError,
}
"""The contract's failure kinds, as geokafka's error classes."""
_FIELD = {role: contract.spec()["failure"]["fields"][role] for role in ("kind", "kafka_code", "retriable", "message")}
JVM_FATAL_HINT = ("Spark's JVM cannot go on: raise its memory (pipeline.spark_conf: spark.driver.memory, "
                  "spark.executor.memory) or run fewer partition groups per process")
_AUTH_CLASSES = (
    "org.apache.kafka.common.errors.AuthenticationException",
    "org.apache.kafka.common.errors.AuthorizationException",
)


def failure_error(typed: dict[str, Any] | None, auth: bool, message: str) -> errors.GeokafkaError:
    """The geokafka error for a stopped query (pure): geokafka's own typed failure first, then a
    refused login or permission, else a Kafka failure worth a retry."""
    if typed is not None:
        kind = str(typed.get(_FIELD["kind"]))
        cls = KINDS.get(kind, errors.KafkaOperationError)
        code = int(typed.get(_FIELD["kafka_code"], -1))
        message = redact(str(typed.get(_FIELD["message"], "")))[:500]
        if kind == "JVM_FATAL":
            message = f"{message}; {JVM_FATAL_HINT}"
        retriable = typed.get(_FIELD["retriable"])
        return cls(message, kafka_code=None if code < 0 else code,
                   retriable=None if retriable is None else bool(retriable))
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = lines[0] if lines else "query stopped"
    causes = [line for line in lines[1:] if line.startswith("Caused by:")]
    if causes:  # the root cause says what really happened
        first = f"{first[:200]} ({causes[-1][:300]})"
    if auth:
        return errors.AuthError(redact(first)[:400])
    return errors.KafkaOperationError(redact(first)[:400])


def classify(java_exception: Any, typed: dict[str, Any] | None, jvm: Any) -> errors.GeokafkaError:
    """Walk ``java_exception``'s causes (py4j) for Kafka's auth classes."""
    auth = False
    lines = [str(java_exception.toString())]
    auth_classes = []
    for name in _AUTH_CLASSES:
        try:
            auth_classes.append(jvm.java.lang.Class.forName(name))
        except Exception:  # noqa: BLE001 - the Kafka client is not on this JVM's class path
            continue
    seen = 0
    cause = java_exception
    while cause is not None and seen < 20:
        seen += 1
        if any(cls.isInstance(cause) for cls in auth_classes):
            auth = True
        if seen > 1:
            lines.append(f"Caused by: {cause.toString()}")
        nxt = cause.getCause()
        if nxt is None or nxt.equals(cause):
            break
        cause = nxt
    return failure_error(typed, auth, "\n".join(lines))
