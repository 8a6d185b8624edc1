"""``./run dist``: geokafka's wheel and sdist, carrying the jars ``mirror`` and the other commands need.

The package is staged in a temporary folder with :data:`geokafka.artifacts.jars.PACKAGED` filled in:
geokafka's Spark source and sink (built from ``jvm/`` with ``mvn``) and the Spark-Kafka jars (fetched
with ``mvn``), each third-party jar with the LICENSE and NOTICE it carries written beside it as
``<jar>.LICENSE`` and ``<jar>.NOTICE``. The pinned ``uv`` builds the sdist from the staging folder and
the wheel from the sdist. The checkout itself is left as it is (no jars inside the package folder).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from geokafka.artifacts import jars
from geokafka.errors import EnvironmentError_, GeokafkaError

ROOT = Path(__file__).resolve().parents[2]
"""The checkout the package is built from."""
_TOP_FILES = ("pyproject.toml", "README.md")
_LEFT_OUT = ("__pycache__", ".pyc", jars.PACKAGED.name)
# (where a jar keeps its licence text, where its NOTICE); Apache Kafka's jars keep them at the top
_LICENCE_NAMES = (("META-INF/LICENSE", "META-INF/LICENSE.txt", "LICENSE"), ("META-INF/NOTICE", "META-INF/NOTICE.txt", "NOTICE"))


def licence_files(jar: Path) -> dict[str, bytes]:
    """The ``LICENSE`` and ``NOTICE`` texts ``jar`` carries; :class:`EnvironmentError_` when one is missing."""
    found: dict[str, bytes] = {}
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
        for kind, candidates in zip(("LICENSE", "NOTICE"), _LICENCE_NAMES):
            name = next((n for n in candidates if n in names), None)
            if name is None:
                raise EnvironmentError_(f"{jar}: carries no {kind} (looked for {', '.join(candidates)})")
            found[kind] = archive.read(name)
    return found


def stage_package(staging: Path, spark_kafka: list[Path], sink: Path) -> list[Path]:
    """Copy the package's sources into ``staging`` and the jars (with their licences) into its packaged
    folder; returns the jars staged."""
    for name in _TOP_FILES:
        shutil.copy2(ROOT / name, staging / name)
    shutil.copytree(ROOT / "geokafka", staging / "geokafka",
                    ignore=lambda _d, names: [n for n in names if n.endswith(_LEFT_OUT)])
    packaged = staging / jars.PACKAGED.relative_to(ROOT)
    (packaged / jars.SPARK_KAFKA.name).mkdir(parents=True)
    staged = [Path(shutil.copy2(sink, packaged / jars.SINK_JAR_NAME))]
    for jar in spark_kafka:
        target = packaged / jars.SPARK_KAFKA.name / jar.name
        for kind, text in licence_files(jar).items():
            target.with_name(f"{jar.name}.{kind}").write_bytes(text)
        staged.append(Path(shutil.copy2(jar, target)))
    return staged


def build(uv: Path, out: Path) -> tuple[Path, list[str]]:
    """Build the sdist and the wheel into ``out``: (the wheel, the jars inside it)."""
    spark_kafka = sorted(jars.jar_dir(jars.SPARK_KAFKA).glob("*.jar"))
    sink = jars.sink_jar()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="geokafka-dist-") as tmp:
        staging = Path(tmp)
        stage_package(staging, spark_kafka, sink)
        cmd = [str(uv), "build", "-q", "--no-progress", "--out-dir", str(out), str(staging)]
        # offline first (setuptools from uv's cache), the index only when the cache lacks it
        result = subprocess.run([*cmd, "--offline"], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
            raise EnvironmentError_(f"uv could not build the wheel: {tail[0]}")
    version = _version()
    wheel = out / f"geokafka-{version}-py3-none-any.whl"
    if not wheel.is_file():
        raise EnvironmentError_(f"uv built no {wheel.name} in {out}")
    with zipfile.ZipFile(wheel) as archive:
        inside = sorted(n for n in archive.namelist() if n.endswith(".jar"))
    if len(inside) != len(spark_kafka) + 1:
        raise EnvironmentError_(f"{wheel}: holds {len(inside)} jars, not the {len(spark_kafka) + 1} staged")
    return wheel, inside


def _version() -> str:
    from geokafka import __version__

    return __version__


def main(argv: list[str]) -> int:
    """``python -m geokafka.artifacts.dist --uv UV OUT`` (``./run dist``)."""
    parser = argparse.ArgumentParser(prog="./run dist")
    parser.add_argument("--uv", type=Path, required=True)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        wheel, inside = build(args.uv, args.out)
    except GeokafkaError as exc:
        print(f"{type(exc).__name__.rstrip('_')}: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{wheel} ({wheel.stat().st_size / 1e6:.1f} MB), with {len(inside)} jars:")
    for name in inside:
        print(f"  {name}")
    sdist = wheel.with_name(f"geokafka-{_version()}.tar.gz")
    if sdist.is_file():
        print(sdist)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
