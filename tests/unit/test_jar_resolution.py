"""Where geokafka finds its jars: the wheel's first, then the cache; what it says when Kafka's are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from geokafka.artifacts import jars
from geokafka.errors import EnvironmentError_


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the packaged folder, the jar cache), both empty; no mvn on PATH."""
    monkeypatch.setattr(jars, "PACKAGED", tmp_path / "packaged")
    monkeypatch.setenv("GEOKAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    return tmp_path / "packaged", tmp_path / "cache" / "jars"


def fill(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".complete").write_text("x\n")
    for name in names:
        (folder / name).write_bytes(name.encode())
    return [folder / n for n in sorted(names)]


def test_the_wheels_jars_come_first(places: tuple[Path, Path]) -> None:
    packaged, cache = places
    fill(cache / "spark-kafka-4.1.1", "kafka-clients-0.jar")
    assert jars.spark_kafka_jars() == [cache / "spark-kafka-4.1.1" / "kafka-clients-0.jar"]  # a checkout: the cache
    wheel = fill(packaged / "spark-kafka", "kafka-clients-3.9.1.jar", "commons-pool2-2.12.1.jar")
    (packaged / "spark-kafka" / "kafka-clients-3.9.1.jar.LICENSE").write_text("Apache License")
    assert jars.spark_kafka_jars() == wheel
    (packaged / jars.SINK_JAR_NAME).write_bytes(b"jar")
    assert jars.sink_jar() == packaged / jars.SINK_JAR_NAME


def test_an_installation_without_the_sink_jar_says_so(places: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jars, "SINK_MODULE", tmp_path / "site-packages" / "jvm")  # no module to build it from
    with pytest.raises(EnvironmentError_, match=r"geokafka-spark\.jar\) is missing from this installation: reinstall"):
        jars.sink_jar()


def test_kafkas_jars_missing_without_mvn_name_the_command_that_fetches_them(places: tuple[Path, Path]) -> None:
    _, cache = places
    with pytest.raises(EnvironmentError_) as raised:
        jars.local_kafka_jars("up")
    assert str(raised.value) == (f"`geokafka up` runs local clusters from Kafka 4.1.1's jars, which are not in "
                                 f"{cache / 'kafka-4.1.1'}: `geokafka fetch-jars` fetches them from Maven Central "
                                 "(needs Maven)")
    assert not cache.exists()  # nothing half-made
    fill(cache / "kafka-4.1.1", "kafka_2.13-4.1.1.jar")
    assert jars.local_kafka_jars("up") == cache / "kafka-4.1.1"


def test_fetch_jars_fetches_only_what_the_installation_lacks(places: tuple[Path, Path]) -> None:
    packaged, cache = places
    fill(cache / "kafka-4.1.1", "kafka_2.13-4.1.1.jar")
    fill(cache / "spark-kafka-4.1.1", "kafka-clients-0.jar")
    assert jars.fetch_jars() == {"kafka 4.1.1": cache / "kafka-4.1.1", "spark-kafka 4.1.1": cache / "spark-kafka-4.1.1"}
    fill(packaged / "spark-kafka", "kafka-clients-3.9.1.jar")
    assert jars.fetch_jars() == {"kafka 4.1.1": cache / "kafka-4.1.1"}
