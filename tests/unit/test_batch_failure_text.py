"""What a failed batch tells Spark: short, and still marked when a stop interrupted it."""

from __future__ import annotations

from geokafka.pipeline.batch_guard import short_failure

JAVA_STACK = "".join(f"\tat org.apache.spark.Frame{i}.run(Frame.scala:{i})\n" for i in range(3000))


class Py4JJavaError(Exception):
    """Stands in for py4j's class: short_failure looks at the type's name only."""


def test_a_long_failure_becomes_its_first_line() -> None:
    text = short_failure(7, RuntimeError("geokafka.errors.RecordTooLargeError: too big\n" + JAVA_STACK))
    assert text == "batch 7 failed: geokafka.errors.RecordTooLargeError: too big"


def test_an_interrupted_call_keeps_the_shape_spark_matches() -> None:
    exc = Py4JJavaError("An error occurred while calling o245.collectToPython.\n: java.lang.InterruptedException\n"
                        + JAVA_STACK)
    assert short_failure(3, exc).splitlines() == [
        "batch 3 failed: An error occurred while calling o245.collectToPython.",
        "py4j.protocol.Py4JJavaError: An error occurred while calling o245.collectToPython.",
        ": java.lang.InterruptedException",
    ]


def test_a_cancelled_job_keeps_its_line() -> None:
    exc = Py4JJavaError("An error occurred while calling o9.collectToPython.\n: org.apache.spark.SparkException: "
                        "Job 12 cancelled part of cancelled job group 5d1c\n" + JAVA_STACK)
    text = short_failure(4, exc)
    assert text.splitlines()[-1] == ": org.apache.spark.SparkException: Job 12 cancelled part of cancelled job group 5d1c"
    assert len(text) < 300

