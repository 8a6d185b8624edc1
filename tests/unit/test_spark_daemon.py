"""Spark's archives leave the workers' path only when pyspark and py4j import without them."""

from __future__ import annotations

import sys

from geokafka.pipeline.spark_daemon import drop_spark_zips

SPARK_LIB = "/opt/spark/python/lib"
ARCHIVES = [f"{SPARK_LIB}/pyspark.zip", f"{SPARK_LIB}/py4j-0.10.9.9-src.zip", "/opt/spark/jars/spark-core_2.13-4.1.1.jar"]


def test_archives_dropped_when_the_installed_packages_import():
    path = [*ARCHIVES, *sys.path]
    assert drop_spark_zips(path) == sys.path


def test_other_zips_and_a_path_without_archives_are_kept():
    path = ["/data/my-udfs.zip", *sys.path]
    assert drop_spark_zips(path) is path


def test_sys_path_is_left_as_it_was():
    before = sys.path[:]
    drop_spark_zips([*ARCHIVES, *sys.path])
    assert sys.path == before
