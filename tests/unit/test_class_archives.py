"""Class archives: one per kind, JDK and jar set; built through a staging file, never half-written; unused ones pruned."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from geokafka.artifacts import class_archives


@pytest.fixture
def jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEOKAFKA_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "kafka.jar"
    path.write_bytes(b"classes")
    return path


def test_a_kind_and_its_jars_name_the_archive(jar: Path) -> None:
    kafka = class_archives.archive_path("kafka", [jar])
    assert kafka.name.startswith("kafka-") and kafka.suffix == ".jsa"
    assert class_archives.archive_path("spark", [jar]).name != kafka.name


def test_build_renames_the_training_output_into_place(jar: Path) -> None:
    path = class_archives.archive_path("kafka", [jar])
    seen: list[Path] = []

    def train(staging: Path) -> bool:
        assert not staging.exists() and staging.parent == path.parent  # the JVM creates it
        seen.append(staging)
        staging.write_bytes(b"archive")
        return True

    assert class_archives.build(path, train) == path
    assert path.read_bytes() == b"archive" and not seen[0].exists()
    assert class_archives.build(path, lambda staging: pytest.fail("built twice")) == path


def test_a_failed_or_empty_training_leaves_no_archive(jar: Path) -> None:
    path = class_archives.archive_path("kafka", [jar])

    def crashed(staging: Path) -> bool:
        staging.write_bytes(b"half")
        return False

    assert class_archives.build(path, crashed) is None
    assert class_archives.build(path, lambda staging: staging.touch() is None) is None  # exited 0, wrote nothing
    assert not path.exists()
    # no staging file or half archive; only the (empty) lock that serialises builds of this archive
    assert [p.name for p in path.parent.iterdir()] == [f".{path.name}.lock"]
    assert class_archives.use_options(path) == []


def test_a_build_deletes_unused_archives_of_its_kind_only(jar: Path) -> None:
    """An archive no JVM used for a week goes (an old JDK or jar set); one another checkout uses stays."""
    old_kafka = class_archives.archive_path("kafka", [jar])
    spark = class_archives.archive_path("spark", [jar])
    old_kafka.parent.mkdir(parents=True)
    old_kafka.write_bytes(b"old")
    spark.write_bytes(b"spark")
    week_ago = time.time() - class_archives.UNUSED_FOR_S - 60
    os.utime(old_kafka, (week_ago, week_ago))
    os.utime(spark, (week_ago, week_ago))
    jar.write_bytes(b"an upgraded jar")
    in_use = class_archives.archive_path("kafka", [jar])
    in_use.write_bytes(b"another checkout's")
    os.utime(in_use, (week_ago, week_ago))
    assert class_archives.use_options(in_use)  # used now
    jar.write_bytes(b"this checkout's jar")
    new_kafka = class_archives.archive_path("kafka", [jar])
    assert len({old_kafka, in_use, new_kafka}) == 3
    assert class_archives.build(new_kafka, lambda staging: staging.write_bytes(b"new") > 0) == new_kafka
    assert not old_kafka.exists() and in_use.exists() and spark.exists()
    assert f"-XX:SharedArchiveFile={new_kafka}" in class_archives.use_options(new_kafka)


def test_a_second_builder_waits_for_the_first_instead_of_training_again(tmp_path: Path) -> None:
    """./run builds Spark's archive beside the tests; a `./run geokafka` meanwhile must not build it again."""
    path = tmp_path / "archives" / "spark-0123.jsa"
    training = threading.Event()
    release = threading.Event()
    trained: list[Path] = []

    def train(staging: Path) -> bool:
        trained.append(staging)
        training.set()
        release.wait(10)
        staging.write_bytes(b"archive")
        return True

    results: list[Path | None] = []
    first = threading.Thread(target=lambda: results.append(class_archives.build(path, train)))
    first.start()
    assert training.wait(10)
    second = threading.Thread(target=lambda: results.append(class_archives.build(path, train)))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting on the first one's lock, not training
    release.set()
    first.join(10)
    second.join(10)
    assert results == [path, path] and len(trained) == 1
