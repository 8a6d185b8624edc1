"""The local Spark session geokafka starts: the JVM options it really runs with."""

from __future__ import annotations

from typing import Any

import pytest

from geokafka.infra.processes import LATE_OPTIMIZING_JIT, jvm_options_from_env
from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV

pytestmark = pytest.mark.integration  # it starts Spark (the suite orders such tests first)


def test_the_driver_runs_with_the_late_optimizing_compiler_then_the_variables_options(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    for option in LATE_OPTIMIZING_JIT:
        assert option in arguments
    # the suite's own options (the quick compiler, tests/conftest.py) come after, so they win
    last_late = max(arguments.index(option) for option in LATE_OPTIMIZING_JIT)
    for option in jvm_options_from_env(SPARK_JVM_OPTIONS_ENV):
        assert arguments.index(option) > last_late


def test_the_driver_runs_spark_without_mllib(spark: Any) -> None:
    classpath = str(spark.sparkContext._jvm.java.lang.System.getProperty("java.class.path"))
    assert "spark-sql_2.13-" in classpath and "spark-core_2.13-" in classpath
    assert "spark-mllib_" not in classpath  # its session extension costs ~1.5 s of every start
