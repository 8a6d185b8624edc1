"""Spark's Python worker daemon, importing pyspark from the installed package, not pyspark.zip.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip``, py4j's zip and the spark-core jar first
on its workers' path. Every task then calls ``importlib.invalidate_caches()``, which makes
each zip importer re-read its archive's directory: 0.1-0.3 s per task on a small machine,
more than a task's whole write of a few thousand records. When pyspark and py4j import
without those archives (a pip-installed pyspark, as geokafka's), the daemon drops them from
its path before forking workers; otherwise it runs exactly as Spark's own daemon.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys


def drop_spark_zips(path: list[str]) -> list[str]:
    """``path`` without Spark's archives (pyspark/py4j zips, jars), if pyspark and py4j import without them."""
    zips = [p for p in path if p.endswith(".jar")
            or (p.endswith(".zip") and os.path.basename(p).startswith(("pyspark", "py4j")))]
    if not zips:
        return path
    saved = sys.path[:]
    sys.path[:] = [p for p in path if p not in zips]
    importlib.invalidate_caches()
    try:
        found = all(importlib.util.find_spec(name) is not None for name in ("pyspark", "py4j"))
    finally:
        kept = sys.path[:]
        sys.path[:] = saved
    return kept if found else path


def _forget_zip_importers() -> None:
    """Importers made for paths no longer on sys.path would still be invalidated per task."""
    for entry in [p for p in sys.path_importer_cache if p not in sys.path and (".zip" in p or ".jar" in p)]:
        del sys.path_importer_cache[entry]


if __name__ == "__main__":
    sys.path[:] = drop_spark_zips(sys.path)
    _forget_zip_importers()
    importlib.invalidate_caches()
    from pyspark.daemon import manager

    manager()
