"""Resolve the pinned Kafka and Spark-Kafka jars from Maven Central with ``mvn``, once.

The poms next to this file pin the versions. Each set is copied into its own cache folder
(``~/.cache/geokafka/jars/<name>-<version>``), written to a temporary folder first and
renamed when complete, so an interrupted fetch never leaves a half-filled cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from geokafka.errors import EnvironmentError_

_POMS = Path(__file__).with_name("poms")
KAFKA_VERSION = "4.1.1"
SPARK_VERSION = "4.1.1"

# pyspark ships Spark and its common libraries; only the connector and Kafka's client are added.
_SPARK_ARTIFACTS = "spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2"


@dataclass(frozen=True)
class JarSet:
    """A named set of jars resolved from one pom."""

    name: str
    version: str
    pom: Path
    include_artifacts: str | None = None


KAFKA = JarSet("kafka", KAFKA_VERSION, _POMS / "kafka.pom.xml")
SPARK_KAFKA = JarSet("spark-kafka", SPARK_VERSION, _POMS / "spark.pom.xml", _SPARK_ARTIFACTS)


def cache_root() -> Path:
    """Where jar sets are cached (``$GEOKAFKA_CACHE`` or ``~/.cache/geokafka``)."""
    return Path(os.environ.get("GEOKAFKA_CACHE", Path.home() / ".cache" / "geokafka")) / "jars"


def jar_dir(jars: JarSet) -> Path:
    """The folder of a resolved jar set, fetching it first if needed."""
    target = cache_root() / f"{jars.name}-{jars.version}"
    if (target / ".complete").exists():
        return target
    _fetch(jars, target)
    return target


def kafka_classpath() -> str:
    """Java classpath of the Kafka broker, tools and MirrorMaker 2."""
    return str(jar_dir(KAFKA) / "*")


def spark_kafka_jars() -> list[Path]:
    """The jars Spark needs on its classpath to read Kafka."""
    return sorted(jar_dir(SPARK_KAFKA).glob("*.jar"))


def _fetch(jars: JarSet, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentError_("mvn not found on PATH: install Maven to fetch the Kafka jars")
    _check_pinned(jars)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{jars.name}-", dir=target.parent))
    cmd = [
        mvn, "-q", "-B", "-f", str(jars.pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
    ]
    if jars.include_artifacts:
        cmd.append(f"-DincludeArtifactIds={jars.include_artifacts}")
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not any(staging.glob("*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no jars resolved"]
        raise EnvironmentError_(f"mvn could not resolve {jars.name} {jars.version}: {tail[0]}")
    (staging / ".complete").write_text(jars.version + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def _check_pinned(jars: JarSet) -> None:
    """The pom and this module must name the same version."""
    text = jars.pom.read_text(encoding="utf-8")
    found = re.search(r"<(?:kafka|spark)\.version>([^<]+)<", text)
    if found is None or found.group(1) != jars.version:
        raise EnvironmentError_(f"{jars.pom.name} pins {found and found.group(1)}, geokafka expects {jars.version}")


def main() -> None:
    """``python -m geokafka.infra.jars``: fetch every jar set (used by ./run)."""
    for jar_set in (KAFKA, SPARK_KAFKA):
        print(f"{jar_set.name} {jar_set.version}: {jar_dir(jar_set)}")


if __name__ == "__main__":
    main()
