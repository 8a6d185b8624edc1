"""Datetimes of `reset-offsets --to-datetime`: ISO 8601, naive means UTC (as Kafka's tool)."""

from __future__ import annotations

import pytest

from geokafka.control.offsets import parse_datetime
from geokafka.control.offsets.by_time import format_ms

AT = 1503381633236  # 2017-08-22T06:00:33.236Z, the talk's example


@pytest.mark.parametrize(
    "text",
    [
        "2017-08-22T06:00:33.236",  # kafka-consumer-groups' format, no zone: UTC
        "2017-08-22T06:00:33.236Z",
        "2017-08-22T08:00:33.236+02:00",
        "2017-08-22T08:00:33.236+0200",
        "2017-08-22T01:00:33.236-05:00",
        " 2017-08-22T06:00:33.236999 ",  # below the millisecond is dropped
    ],
)
def test_accepted_forms(text: str) -> None:
    assert parse_datetime(text) == AT


def test_without_fraction_and_round_trip() -> None:
    assert parse_datetime("2017-08-22T06:00:33") == AT - 236
    assert format_ms(AT) == "2017-08-22T06:00:33.236Z"
    assert parse_datetime(format_ms(AT)) == AT


@pytest.mark.parametrize("text", ["yesterday", "2017-13-01T00:00:00", "", "06:00:33"])
def test_malformed_datetimes_are_rejected_with_the_value(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_datetime(text)
