"""The Spark home geokafka's driver starts from: pyspark's own, without the jars it never uses.

pyspark ships all of Spark, MLlib included. MLlib registers two SQL functions in every new
SparkSession through a ``SparkSessionExtensionsProvider`` (``InternalFunctionRegistration``,
found by Java's ServiceLoader on the class path); registering them builds Scala's runtime
reflection universe, which in a fresh JVM took ~1.5 s of the session's ~2 s (wall-clock
profile of a mirror's start on this project's 2-core machine). geokafka runs no MLlib, so its
driver starts from a Spark home whose ``jars/`` links every pyspark jar but MLlib's and whose
other entries (``bin/``, ``python/``, ...) link pyspark's. It lives beside the jar cache, one per
pyspark installation, and is written under a temporary name and renamed when complete. ``./run``
builds it (``python -m geokafka.artifacts.spark_home``); geokafka itself only uses it when it
exists (an installed wheel builds nothing at run time) and otherwise starts from pyspark's own
home. A ``SPARK_HOME`` the user set is used as it is.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from geokafka.artifacts.jars import cache_root, jar_set_digest

LEFT_OUT = ("spark-mllib_",)
"""Name prefixes of the pyspark jars a geokafka driver leaves off its class path."""


def pyspark_home() -> Path:
    """pyspark's installed Spark home (its package folder)."""
    import pyspark

    return Path(pyspark.__file__).parent


def spark_home() -> Path:
    """The Spark home the driver starts from: ``$SPARK_HOME`` when set, else the trimmed one when it
    was built (:func:`trimmed_home`), else pyspark's own. Builds nothing."""
    configured = os.environ.get("SPARK_HOME")
    if configured:
        return Path(configured)
    source = pyspark_home()
    trimmed = trimmed_path(source)
    return trimmed if trimmed.is_dir() else source


def trimmed_path(source: Path) -> Path:
    """Where the trimmed Spark home of ``source`` lives (it may not exist)."""
    jars = sorted((source / "jars").iterdir())
    return cache_root().parent / "spark-homes" / f"spark-{jar_set_digest(str(source.resolve()), jars)}"


def trimmed_home(source: Path) -> Path:
    """A Spark home linking ``source``'s entries, its ``jars/`` without :data:`LEFT_OUT` (built unless it exists)."""
    jars = sorted((source / "jars").iterdir())
    target = trimmed_path(source)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for entry in source.iterdir():
            if entry.name != "jars":
                (staging / entry.name).symlink_to(entry.resolve())
        (staging / "jars").mkdir()
        for jar in jars:
            if not jar.name.startswith(LEFT_OUT):
                (staging / "jars" / jar.name).symlink_to(jar.resolve())
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # another process's rename won the race: use theirs
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


if __name__ == "__main__":  # ./run: build the trimmed home of this environment's pyspark
    print(trimmed_home(pyspark_home()))
