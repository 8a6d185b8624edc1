"""A periodic job's failures said once while they last, and its recovery said once.

A flow's runner syncs configs and group offsets every few seconds, writes a heartbeat every five
and restarts a failed query with backoff up to 30 s: while a cluster is down (a lost data center,
for hours) each run fails the same way, and a warning per run would bury everything else the log
has to say.
"""

from __future__ import annotations

import logging


class RepeatedFailure:
    """Reports for one periodic job: the first failure of a kind as a warning, the same kind
    again only at debug level, and the first success after failures as a warning too (whoever
    saw the failure, with a console that shows warnings only, must see it end).

    A failure's kind is its class and Kafka error code (never its text, which names changing
    details): a different kind is said again.
    """

    def __init__(self, logger: logging.Logger, what: str, retried: str) -> None:
        """``what`` names the job in every line; ``retried`` says when it runs again ("every 10s")."""
        self._log = logger
        self._what = what
        self._retried = retried
        self._kind: tuple[type[BaseException], int | None] | None = None
        self._failed_runs = 0

    @property
    def failing(self) -> bool:
        """True while the job's last run failed."""
        return self._kind is not None

    def failed(self, exc: BaseException) -> None:
        """The job's run failed with ``exc``."""
        self._failed_runs += 1
        kind = (type(exc), getattr(exc, "kafka_code", None))
        if kind == self._kind:
            self._log.debug("%s failed again: %s", self._what, exc)
            return
        self._kind = kind
        self._log.warning("%s failed: %s (retried %s; said again when it works or fails otherwise)",
                          self._what, exc, self._retried)

    def succeeded(self) -> None:
        """The job's run worked."""
        if self._kind is not None:
            runs = self._failed_runs
            self._log.warning("%s works again after %d failure%s", self._what, runs, "" if runs == 1 else "s")
        self._kind = None
        self._failed_runs = 0
