"""The Spark driver's class archive: keyed by JDK and classpath, used only once it exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from geokafka.pipeline import class_archive


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEOKAFKA_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_the_archive_is_keyed_by_the_classpath(cache: Path) -> None:
    jar = cache / "connector.jar"
    jar.write_bytes(b"one")
    first = class_archive.archive_path([jar])
    assert first == class_archive.archive_path([jar])
    jar.write_bytes(b"a longer jar")  # a rebuilt jar is another classpath: its own archive
    assert class_archive.archive_path([jar]) != first
    assert first.parent == cache / "cache" / "class-archives"


def test_no_options_until_the_archive_exists(cache: Path) -> None:
    jar = cache / "connector.jar"
    jar.write_bytes(b"one")
    assert class_archive.java_options([jar]) == []
    path = class_archive.archive_path([jar])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    options = class_archive.java_options([jar])
    assert f"-XX:SharedArchiveFile={path}" in options
    assert "-Xshare:auto" in options  # a JVM that cannot map it runs without it


def test_a_second_builder_waits_for_the_first_instead_of_training_again(cache: Path) -> None:
    """./run builds Spark's archive beside the tests; a `./run geokafka` meanwhile must not build it again."""
    import threading

    from geokafka.artifacts import class_archives

    path = cache / "archives" / "spark-0123.jsa"
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
