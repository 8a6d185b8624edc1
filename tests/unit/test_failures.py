"""A stopped query's failure as the geokafka error it stands for (pure: decided by type, never by text)."""

from __future__ import annotations

from geokafka import errors
from geokafka.pipeline.failures import failure_error


def typed(kind: str, code: int = -1, message: str = "m") -> dict[str, object]:
    return {"kind": kind, "kafka_code": code, "retriable": False, "message": message}


def test_records_gone_from_the_source_are_a_data_loss_error_with_kafkas_code() -> None:
    error = failure_error(typed("DATA_LOSS", 1, "orders/0 offset 100 is no longer on the source"), False, "ignored")
    assert isinstance(error, errors.DataLossError)
    assert error.kafka_code == 1 and "orders/0 offset 100" in str(error)


def test_each_kind_maps_to_its_class() -> None:
    assert isinstance(failure_error(typed("RECORD_TOO_LARGE", 10), False, ""), errors.RecordTooLargeError)
    assert isinstance(failure_error(typed("AUTH"), False, ""), errors.AuthError)
    assert type(failure_error(typed("KAFKA"), False, "")) is errors.KafkaOperationError
    assert failure_error(typed("KAFKA"), False, "").kafka_code is None


def test_without_a_typed_failure_the_root_cause_is_named() -> None:
    message = "org.apache.spark.SparkException: job aborted\nCaused by: java.io.IOException: disk full"
    error = failure_error(None, False, message)
    assert type(error) is errors.KafkaOperationError and "disk full" in str(error)
    assert isinstance(failure_error(None, True, message), errors.AuthError)
