"""A class-data-sharing archive of the Spark driver's classes, so a mirror starts in half the CPU.

Starting Spark costs the driver JVM ~18 CPU seconds of class loading, verification and JIT
before the session exists and ~8 more before its first job (measured on this project's
2-core machine). Where brokers and traffic already use most of the CPU, as in the demo, that
stretched a mirror's start to a minute. An application class-data-sharing archive (Java's
AppCDS: ``-XX:ArchiveClassesAtExit`` once, ``-XX:SharedArchiveFile`` after) maps those classes
already parsed and verified: measured, session 10.8 s -> 6.2 s and 17.8 -> 9.7 CPU s; first job
4.6 s -> 2.3 s.

The archive is built once per JDK, pyspark and classpath (``./run`` does it; ``python -m
geokafka.pipeline.class_archive_build``) by a short training run in a process of its own, written to
a temporary name and renamed when the JVM exited cleanly. Only the local driver (which is
also the local executor) uses it; a JVM that cannot map it falls back to loading classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from geokafka.artifacts import class_archives
from geokafka.artifacts.spark_home import spark_home


def _spark_jars_dir() -> Path:
    return spark_home() / "jars"


def archive_path(classpath: Sequence[Path]) -> Path:
    """Where the archive for this JDK, pyspark and extra ``classpath`` lives (it may not exist)."""
    return class_archives.archive_path("spark", [*sorted(_spark_jars_dir().glob("*.jar")), *classpath])


def java_options(classpath: Sequence[Path]) -> list[str]:
    """JVM options that use the archive when it has been built (none otherwise)."""
    return class_archives.use_options(archive_path(classpath))
