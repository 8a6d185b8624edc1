"""What a flow does next, decided from what happened to it (pure: no Kafka, no Spark, no clock of its own).

The runner (:mod:`geokafka.pipeline.runner`) tells the machine what happened -- a start worked or
failed, the query failed, a failover was made elsewhere -- with the time; the machine keeps the
state, the error and the backoff, and says whether a start is due. Retriable failures retry with
backoff; fatal ones (data loss, oversize record, refused credentials, a JVM that failed, a Kafka
error marked not retriable) end the flow in ``error``; a failover ends it in ``failed-over``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from geokafka import errors
from geokafka.control.flow_states import FlowState
from geokafka.pipeline.backoff import Backoff


@dataclass
class FlowMachine:
    """A flow's state, last error and retry schedule."""

    status: FlowState = FlowState.RETRYING
    """A flow starts as if its last start had failed: the first start is due at once."""
    error: errors.GeokafkaError | None = None
    backoff: Backoff = field(default_factory=Backoff)
    ever_started: bool = False
    restarts: int = 0
    """Query restarts after a failure or a change (not failed starts)."""

    @property
    def shown(self) -> FlowState:
        """The state to show: ``starting`` while a start is due or under way with no failure behind it (the
        first start, or a restart for new partitions), ``retrying`` only after a failure."""
        if self.status == FlowState.RETRYING and self.error is None:
            return FlowState.STARTING
        return self.status

    def start_due(self, now: float) -> bool:
        """A start should be tried now."""
        return self.status == FlowState.RETRYING and self.backoff.due(now)

    def started(self) -> None:
        """A start worked: the query runs."""
        self.status, self.error = FlowState.RUNNING, None
        self.ever_started = True
        self.backoff.reset()

    def start_failed(self, exc: errors.GeokafkaError, now: float) -> None:
        """A start failed: retry with backoff, or stop for good."""
        if isinstance(exc, errors.FlowFailedOverError):
            self.failed_over()
        elif not exc.retriable:
            self.fail(exc)
        else:
            self.retry(exc, now)

    def query_failed(self, exc: errors.GeokafkaError, now: float) -> None:
        """The running query stopped with ``exc``."""
        if not exc.retriable:
            self.fail(exc)
        else:
            self.restarts += 1
            self.retry(exc, now)

    def restart_now(self, now: float) -> None:
        """Start again at once (new partitions, a re-created topic, a gap to skip)."""
        self.restarts += 1
        self.status = FlowState.RETRYING
        self.backoff.retry_at = now

    def retry(self, exc: errors.GeokafkaError, now: float) -> float:
        """Try again after the next backoff delay; returns it."""
        delay = self.backoff.schedule(now)
        self.status, self.error = FlowState.RETRYING, exc
        return delay

    def fail(self, exc: errors.GeokafkaError) -> None:
        """Stop for good: a person must look."""
        self.status, self.error = FlowState.ERROR, exc

    def failed_over(self) -> None:
        """``failover``/``promote`` ran (maybe in another process): the flow ends, its state is theirs."""
        self.status, self.error = FlowState.FAILED_OVER, None

    def final_state(self, requested: FlowState = FlowState.STOPPED) -> FlowState | None:
        """The state a stopping flow records (None: record nothing, a failover wrote its own); see
        :func:`ended_state`."""
        if self.status == FlowState.FAILED_OVER:
            return None
        self.status = ended_state(self.status, self.error, self.ever_started, requested)
        return self.status


def ended_state(status: FlowState, error: errors.GeokafkaError | None, ever_started: bool,
                requested: FlowState = FlowState.STOPPED) -> FlowState:
    """What a flow in ``status`` ends as when it stops: a failover and an error stay; a flow that never replicated
    and was still retrying gives up with its reason, as an error; anything else is ``requested``."""
    if status in (FlowState.FAILED_OVER, FlowState.ERROR):
        return status
    if status == FlowState.RETRYING and error is not None and not ever_started:
        return FlowState.ERROR
    return requested


def loss_outcome(failure: errors.DataLossError, diagnosed: errors.DataLossError | None,
                 skip_gaps: bool) -> tuple[bool, errors.GeokafkaError]:
    """What a query stopped on a data loss does next: ``(restart at once, error)``.

    The source never skips records on its own. When the driver finds the gap and the flow skips gaps,
    a new start's plan logs, counts and skips it (restart at once). A gap the driver cannot find (yet)
    is retried with backoff under skip_gaps; without skip_gaps the loss is fatal, named by the
    driver's diagnosis when there is one.
    """
    if diagnosed is not None and skip_gaps:
        return True, diagnosed
    found = diagnosed or failure
    if skip_gaps:
        return False, errors.DataLossError(str(found), kafka_code=found.kafka_code, retriable=True)
    return False, found
