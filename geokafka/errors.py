"""The exception tree of geokafka.

Every error a user can cause or meet is a :class:`GeokafkaError`; the CLI prints it as one
line (``Type: message``) and exits with its ``exit_code``, never with a traceback::

    GeokafkaError (1)
    ├── TopologyError (2)          the topology file is unreadable or invalid
    ├── EnvironmentError_ (3)      the machine lacks something (java, mvn, a free port)
    ├── ClusterUnreachableError (4) a cluster does not answer
    │   └── NodeExitedError        a local node's process ended while it started
    ├── KafkaOperationError (5)    a Kafka admin/produce/consume call failed
    ├── MissingTopicError (6)      a topic that must exist does not
    ├── DataLossError (7)          replication would skip records (gap, truncation)
    ├── RecordTooLargeError (8)    a record does not fit the target topic
    ├── AuthError (9)              credentials or TLS were refused
    ├── FlowStateError (10)        the flow is in the wrong state for the command
    │   ├── FlowFailedOverError    the flow was failed over: a mirror must not replicate it
    │   ├── AlreadyFailedOverError failover/promote of a flow failed over already
    │   ├── NotFailedOverError     failback of a flow that is not failed over
    │   ├── LateWritesError        failback refused: writes at the old source after the failover
    │   └── SourceStillReachedError failover refused: the mirror still reaches the source
    ├── DrillFailedError (11)      a drill saw reality disagree with the plan
    ├── PartitionMismatchError (12) a target topic has fewer partitions than its source
    ├── JvmFatalError (13)         Spark's JVM failed (out of memory, ...): nothing in it can be trusted
    └── OutputError (14)           a file to write cannot be written as asked (exists, too large)

Exit codes from 20 on are not errors but answers (:data:`ANSWERS`): `geokafka status` exits 20 when a flow
needs a person; `geokafka mirror` exits 21 when every flow it ran is failed over.
"""

from __future__ import annotations

import re

UNHEALTHY_EXIT = 20
ALL_FAILED_OVER_EXIT = 21
ANSWERS: dict[int, str] = {
    UNHEALTHY_EXIT: "`geokafka status`: a flow needs a person (in error or down, or its source or state cannot be read)",
    ALL_FAILED_OVER_EXIT: ("`geokafka mirror`: every flow it ran is failed over, nothing is left for it to replicate "
                           "(a service unit with `RestartPreventExitStatus=21` stays stopped)"),
}
"""Exit codes that answer a question rather than report an error."""


class GeokafkaError(Exception):
    """Root of all geokafka errors; ``str(err)`` is the one line shown to the user.

    ``retriable``: trying again later may succeed (a running flow restarts; otherwise it stops).
    ``kafka_code``: the Kafka error code behind it, when there is one.
    """

    exit_code = 1
    retriable = False

    def __init__(self, message: str = "", *, kafka_code: int | None = None, retriable: bool | None = None) -> None:
        super().__init__(message)
        self.kafka_code = kafka_code
        if retriable is not None:
            self.retriable = retriable


class TopologyError(GeokafkaError):
    """The topology file cannot be read or does not match the schema."""

    exit_code = 2


class EnvironmentError_(GeokafkaError):
    """This machine lacks something geokafka needs (java, mvn, a free port, jars)."""

    exit_code = 3


class ClusterUnreachableError(GeokafkaError):
    """A Kafka cluster did not answer within the timeout."""

    exit_code = 4
    retriable = True


class NodeExitedError(ClusterUnreachableError):
    """A local Kafka process exited during start-up (a port taken in the meantime, a bad config)."""


class KafkaOperationError(GeokafkaError):
    """A Kafka call failed; the message says what was being attempted."""

    exit_code = 5
    retriable = True


class MissingTopicError(GeokafkaError):
    """A topic that must exist does not."""

    exit_code = 6


class DataLossError(GeokafkaError):
    """Replication would skip records: the source no longer has them."""

    exit_code = 7


class RecordTooLargeError(GeokafkaError):
    """A record is larger than the target topic accepts."""

    exit_code = 8


class AuthError(GeokafkaError):
    """Authentication, authorization or TLS failed."""

    exit_code = 9


class FlowStateError(GeokafkaError):
    """The flow is in a state where the command cannot run (e.g. already failed over)."""

    exit_code = 10


class FlowFailedOverError(FlowStateError):
    """The flow was failed over to its target; only failback may start it again."""


class AlreadyFailedOverError(FlowStateError):
    """`failover` or `promote` of a flow that is failed over already (a site-wide run counts it as done)."""


class NotFailedOverError(FlowStateError):
    """`failback` of a flow that is not failed over (a site-wide run counts it as done)."""


class LateWritesError(FlowStateError):
    """`failback` refused: records were written at the old source after the failover and not replayed to the new
    primary (a split brain); ``reconcile --replay --execute`` moves them, ``--ignore-late-writes`` leaves them."""


class SourceStillReachedError(FlowStateError):
    """`failover` refused: the flow's own mirror still reaches the source, so the site looks lost from here only
    (a network partition); ``--force`` fails over anyway."""


class DrillFailedError(GeokafkaError):
    """A drill measured something the plan said could not happen."""

    exit_code = 11


class PartitionMismatchError(GeokafkaError):
    """A target topic has fewer partitions than its source and may not be grown."""

    exit_code = 12


class JvmFatalError(GeokafkaError):
    """Spark's JVM hit an error it cannot recover from (``OutOfMemoryError``, ...): the mirror stops."""

    exit_code = 13


class OutputError(GeokafkaError):
    """A file geokafka was asked to write cannot be written as asked (it exists, it would be too large)."""

    exit_code = 14


def refusal_reason(text: str) -> str:
    """librdkafka's refusal text without the broker address and timing around it.

    ``sasl_ssl://h:p/bootstrap: SASL authentication error: ... (after 436ms in state AUTH_REQ)``
    """
    text = re.sub(r"^\w+://[^ ]+?: ", "", text)
    return re.sub(r" \(after \d+ms in state \w+\)$", "", text)
