"""The SparkSession geokafka's queries run in, with the Kafka connector on its classpath."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathlib import Path

from geokafka.infra.jars import spark_kafka_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG4J = Path(__file__).with_name("spark-log4j2.properties")
_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.python.worker.reuse": "true",
    # Workers import pyspark from the installed package: see spark_daemon.py for the why.
    "spark.python.daemon.module": "geokafka.pipeline.spark_daemon",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "4000",
    "spark.driver.memory": "2g",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    # One Spark task per Kafka partition: the writer fences zombies per source partition.
    "spark.speculation": "false",
    # Stopping a query whose source or target died must not wait forever for its thread.
    "spark.sql.streaming.stopTimeout": "15000",
}


def get_spark(master: str = "local[*]", app_name: str = "geokafka", conf: Mapping[str, str] | None = None) -> SparkSession:
    """Create (or return the running) SparkSession for ``master`` with the Kafka connector."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.jars", ",".join(str(p) for p in spark_kafka_jars()))
    log_conf = f"-Dlog4j2.configurationFile={_LOG4J}"
    builder = builder.config("spark.driver.extraJavaOptions", log_conf)
    builder = builder.config("spark.executor.extraJavaOptions", log_conf)
    for key, value in {**_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
