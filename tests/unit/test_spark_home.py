"""The Spark home a geokafka driver starts from: pyspark's, MLlib's jar left off the class path."""

from __future__ import annotations

from pathlib import Path

import pytest

from geokafka.artifacts import spark_home


@pytest.fixture
def pyspark_like(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEOKAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    source = tmp_path / "pyspark"
    (source / "jars" / "connect-repl").mkdir(parents=True)
    (source / "bin").mkdir()
    (source / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    for name in ("spark-core_2.13-4.1.1.jar", "spark-mllib_2.13-4.1.1.jar", "spark-mllib-local_2.13-4.1.1.jar"):
        (source / "jars" / name).write_bytes(name.encode())
    return source


def test_every_entry_is_linked_but_mllibs_jar(pyspark_like: Path) -> None:
    home = spark_home.trimmed_home(pyspark_like)
    assert sorted(p.name for p in (home / "jars").iterdir()) == [
        "connect-repl", "spark-core_2.13-4.1.1.jar", "spark-mllib-local_2.13-4.1.1.jar"]
    assert (home / "jars" / "spark-core_2.13-4.1.1.jar").read_bytes() == b"spark-core_2.13-4.1.1.jar"
    assert (home / "bin" / "spark-submit").resolve() == (pyspark_like / "bin" / "spark-submit").resolve()
    assert home.parent == pyspark_like.parent / "cache" / "spark-homes"
    assert [p.name for p in home.parent.iterdir()] == [home.name]  # no staging folder left behind


def test_a_home_is_made_once_per_set_of_jars(pyspark_like: Path) -> None:
    first = spark_home.trimmed_home(pyspark_like)
    marker = first / "made-before"
    marker.write_text("")
    assert spark_home.trimmed_home(pyspark_like) == first and marker.exists()
    (pyspark_like / "jars" / "spark-core_2.13-4.1.1.jar").write_bytes(b"another build")
    second = spark_home.trimmed_home(pyspark_like)
    assert second != first
    assert (second / "jars" / "spark-core_2.13-4.1.1.jar").read_bytes() == b"another build"


def test_a_spark_home_the_user_set_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "their-spark"))
    assert spark_home.spark_home() == tmp_path / "their-spark"


def test_the_trimmed_home_is_used_only_once_built(pyspark_like: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed wheel builds nothing at run time: without the trimmed home (``./run`` builds it) the driver
    starts from pyspark's own, and nothing is written to the cache."""
    monkeypatch.setattr(spark_home, "pyspark_home", lambda: pyspark_like)
    assert spark_home.spark_home() == pyspark_like
    assert not (pyspark_like.parent / "cache").exists()
    built = spark_home.trimmed_home(pyspark_like)
    assert spark_home.spark_home() == built
