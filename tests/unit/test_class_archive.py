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
