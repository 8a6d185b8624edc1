"""``./run dist``'s pure parts: each third-party jar goes into the wheel with the LICENSE and NOTICE it carries."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from geokafka.artifacts import dist
from geokafka.errors import EnvironmentError_


def test_each_packaged_jar_brings_its_licence_and_notice(tmp_path: Path) -> None:
    apache_style, kafka_style, bare = tmp_path / "a.jar", tmp_path / "k.jar", tmp_path / "b.jar"
    for jar, names in [(apache_style, ["META-INF/LICENSE.txt", "META-INF/NOTICE.txt"]), (kafka_style, ["LICENSE", "NOTICE"]),
                       (bare, ["META-INF/LICENSE"])]:
        with zipfile.ZipFile(jar, "w") as archive:
            for name in names:
                archive.writestr(name, f"text of {name}")
    assert dist.licence_files(apache_style) == {"LICENSE": b"text of META-INF/LICENSE.txt",
                                                "NOTICE": b"text of META-INF/NOTICE.txt"}
    assert dist.licence_files(kafka_style) == {"LICENSE": b"text of LICENSE", "NOTICE": b"text of NOTICE"}
    with pytest.raises(EnvironmentError_, match=r"b\.jar: carries no NOTICE"):
        dist.licence_files(bare)
