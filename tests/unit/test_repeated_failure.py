"""RepeatedFailure: a periodic job's failure said once while it lasts, its recovery once."""

from __future__ import annotations

import logging

import pytest

from geokafka import errors
from geokafka.pipeline.repeated_failure import RepeatedFailure

LOG = logging.getLogger("test.repeated")


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOG.name]


def test_the_same_failure_is_warned_once_then_its_recovery_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOG.name)
    job = RepeatedFailure(LOG, "flow f: group offset sync", "every 10s")
    for _ in range(5):
        job.failed(errors.ClusterUnreachableError("cluster east (127.0.0.1:1) is not reachable"))
    assert job.failing
    job.succeeded()
    job.succeeded()
    levels = [level for level, _ in said(caplog)]
    assert levels == ["WARNING", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "WARNING"]
    warning, info = said(caplog)[0][1], said(caplog)[-1][1]
    assert warning == ("flow f: group offset sync failed: cluster east (127.0.0.1:1) is not reachable "
                       "(retried every 10s; said again when it works or fails otherwise)")
    assert info == "flow f: group offset sync works again after 5 failures"
    assert not job.failing


def test_a_failure_of_another_kind_is_said_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOG.name)
    job = RepeatedFailure(LOG, "flow f: heartbeat", "every 5s")
    job.failed(errors.ClusterUnreachableError("west is down"))
    job.failed(errors.ClusterUnreachableError("west is still down, other words"))  # same kind: quiet
    job.failed(errors.KafkaOperationError("writing state", kafka_code=7))  # another class
    job.failed(errors.KafkaOperationError("writing state", kafka_code=7))
    job.failed(errors.KafkaOperationError("writing state", kafka_code=29))  # another Kafka error code
    assert [m for _, m in said(caplog)] == [
        "flow f: heartbeat failed: west is down (retried every 5s; said again when it works or fails otherwise)",
        "flow f: heartbeat failed: writing state (retried every 5s; said again when it works or fails otherwise)",
        "flow f: heartbeat failed: writing state (retried every 5s; said again when it works or fails otherwise)",
    ]


def test_a_job_that_never_failed_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOG.name)
    job = RepeatedFailure(LOG, "flow f: topic config/ACL sync", "every 10s")
    job.succeeded()
    assert said(caplog) == []
