"""Find geokafka's jars: those an installed wheel carries, else those fetched from Maven Central with ``mvn``.

A wheel (``./run dist``) carries what Spark needs to mirror in :data:`PACKAGED`: geokafka's Spark
source and sink and the Spark-Kafka jars, each with its LICENSE and NOTICE beside it; those are
used first. Otherwise (a checkout) the poms next to this file pin the versions and each set is
copied into its own cache folder (``~/.cache/geokafka/jars/<name>-<version>``), written to a
temporary folder first and renamed when complete, so an interrupted fetch never leaves a
half-filled cache. Kafka's own jars (local clusters: ``up``, ``demo``, ``drill``, ``bench``) are
never in the wheel: :func:`local_kafka_jars` fetches them with ``mvn`` or says how to.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
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

PACKAGED = Path(__file__).with_name("packaged")
"""The jars a wheel carries (written by ``./run dist``; absent in a checkout)."""
SINK_JAR_NAME = "geokafka-spark.jar"


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
    """The jars Spark needs on its classpath to read Kafka: the wheel's, else the cache's (fetched if needed)."""
    packaged = sorted((PACKAGED / SPARK_KAFKA.name).glob("*.jar"))
    return packaged or sorted(jar_dir(SPARK_KAFKA).glob("*.jar"))


def local_kafka_jars(command: str) -> Path:
    """The folder of Kafka's jars that ``command`` runs local clusters from: the cache's; on a first run
    fetched with ``mvn`` when it is on PATH; else :class:`EnvironmentError_` saying what is missing and
    which command fetches it (checked before anything starts)."""
    target = cache_root() / f"{KAFKA.name}-{KAFKA.version}"
    if not (target / ".complete").exists() and shutil.which("mvn") is None:
        raise EnvironmentError_(f"`geokafka {command}` runs local clusters from Kafka {KAFKA.version}'s jars, which are "
                                f"not in {target}: `geokafka fetch-jars` fetches them from Maven Central (needs Maven)")
    return jar_dir(KAFKA)


def fetch_jars() -> dict[str, Path]:
    """Fetch (``mvn``) every jar set this installation does not carry: name -> folder."""
    sets = [KAFKA] + ([] if any((PACKAGED / SPARK_KAFKA.name).glob("*.jar")) else [SPARK_KAFKA])
    return {f"{s.name} {s.version}": jar_dir(s) for s in sets}


def jar_set_digest(seed: str, jars: Iterable[Path]) -> str:
    """16 hex digits naming what is built from ``jars`` (their names, sizes and modification times,
    in the order given) for ``seed`` (e.g. the JDK): a changed jar gives another name."""
    digest = hashlib.sha256(seed.encode())
    for jar in jars:
        stat = jar.stat()
        digest.update(f"{jar.name}:{stat.st_size}:{int(stat.st_mtime)}\n".encode())
    return digest.hexdigest()[:16]


SINK_MODULE = Path(__file__).resolve().parents[2] / "jvm"
"""The Maven module of geokafka's Spark source and sink (in the repository, next to the package)."""
CONTRACT_FILE = Path(__file__).resolve().parents[1] / "contract.json"
"""The Python-Java contract, which the module's jar carries (see :mod:`geokafka.contract`)."""


UNUSED_JAR_S = 7 * 24 * 3600.0
"""A build of the jvm module nobody used this long is deleted when another is built."""


def sink_jar() -> Path:
    """geokafka's Spark source and sink: the wheel's; in a checkout built with ``mvn`` against the pinned
    pyspark and Kafka client when missing or when its sources or the contract changed (cached per source
    digest, staged and renamed when complete)."""
    packaged = PACKAGED / SINK_JAR_NAME
    if packaged.is_file():
        return packaged
    if not (SINK_MODULE / "pom.xml").is_file():
        raise EnvironmentError_(f"geokafka's Spark source and sink ({packaged}) is missing from this installation: "
                                "reinstall geokafka from its wheel")
    kafka_clients = next(iter(sorted(jar_dir(SPARK_KAFKA).glob("kafka-clients-*.jar"))))
    spark_jars = _pyspark_jars()
    digest = hashlib.sha256()
    for path in sorted([SINK_MODULE / "pom.xml", *(SINK_MODULE / "src" / "main").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(SINK_MODULE)).encode() + b"\0" + path.read_bytes())
    digest.update(b"contract.json\0" + CONTRACT_FILE.read_bytes())
    digest.update(f"{SPARK_VERSION}:{kafka_clients.name}".encode())
    target = cache_root() / f"geokafka-spark-{digest.hexdigest()[:16]}"
    jar = target / SINK_JAR_NAME
    if jar.exists():
        with contextlib.suppress(OSError):
            os.utime(target)  # in use: kept while other builds come and go
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentError_("mvn not found on PATH: install Maven to build geokafka's Spark source and sink")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".geokafka-spark-", dir=target.parent))
    cmd = [mvn, "-q", "-B", "-f", str(SINK_MODULE / "pom.xml"), "package", f"-Dpyspark.jars={spark_jars}",
           f"-Dkafka.clients.jar={kafka_clients}", f"-Dbuild.dir={staging / 'build'}", "-Dmaven.test.skip=true"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    built = staging / "build" / "geokafka-spark.jar"
    if result.returncode != 0 or not built.exists():
        shutil.rmtree(staging, ignore_errors=True)
        errors = [line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line]
        # javac's own lines name the file and line; Maven's first one only says "COMPILATION ERROR :"
        errors = [line for line in errors if ".java:[" in line] or errors
        raise EnvironmentError_(f"mvn could not build geokafka's Spark source and sink ({SINK_MODULE}): "
                                f"{(errors or ['no jar built'])[0].strip()}")
    built.rename(staging / SINK_JAR_NAME)
    shutil.rmtree(staging / "build", ignore_errors=True)
    for old in target.parent.glob("geokafka-spark-*"):
        # another checkout on this machine, or a process started before this build, may still run its own
        # build: only builds nobody used for a week go
        with contextlib.suppress(OSError):
            if old.is_dir() and time.time() - old.stat().st_mtime > UNUSED_JAR_S:
                shutil.rmtree(old, ignore_errors=True)
    try:
        staging.rename(target)
    except OSError:
        if not jar.exists():
            raise
        shutil.rmtree(staging, ignore_errors=True)  # another process built the same sources first: its jar is ours
    return jar


def _pyspark_jars() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EnvironmentError_("pyspark is not installed: run ./run to create the environment")
    return Path(spec.origin).parent / "jars"


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


def run_jvm_tests() -> int:
    """The jvm module's JUnit tests (``mvn test``, built in a temporary folder): 0 when they pass; else
    prints each failed test's first line and the summary."""
    kafka_clients = next(iter(sorted(jar_dir(SPARK_KAFKA).glob("kafka-clients-*.jar"))))
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentError_("mvn not found on PATH: install Maven to test geokafka's Spark source and sink")
    with tempfile.TemporaryDirectory(prefix="geokafka-jvm-test-") as build:
        cmd = [mvn, "-q", "-B", "-f", str(SINK_MODULE / "pom.xml"), "test", f"-Dpyspark.jars={_pyspark_jars()}",
               f"-Dkafka.clients.jar={kafka_clients}", f"-Dbuild.dir={build}"]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        reports = sorted(Path(build, "surefire-reports").glob("*.txt"))
        counts = [line for r in reports for line in r.read_text().splitlines() if line.startswith("Tests run:")]
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).splitlines()
            shown = [line for line in lines if "<<< FAILURE" in line or "<<< ERROR" in line or ".java:[" in line]
            print("\n".join((shown or lines[-20:])[:40]))
            return result.returncode
    total = sum(int(line.split(",")[0].split(":")[1]) for line in counts)
    print(f"jvm module: {total} JUnit tests passed")
    return 0


def main(argv: list[str]) -> int:
    """``python -m geokafka.artifacts.jars``: fetch every jar set (used by ./run); ``--test``: run the jvm
    module's JUnit tests."""
    if argv == ["--test"]:
        return run_jvm_tests()
    for jar_set in (KAFKA, SPARK_KAFKA):
        print(f"{jar_set.name} {jar_set.version}: {jar_dir(jar_set)}")
    print(f"geokafka-spark: {sink_jar()}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
