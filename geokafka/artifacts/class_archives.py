"""Class-data-sharing archives (Java's AppCDS) of geokafka's JVMs: where they live, how they are used and built.

A JVM spends most of its first seconds loading, parsing and verifying classes. An archive
written by a training run (``-XX:ArchiveClassesAtExit``) maps them already parsed and verified
(``-XX:SharedArchiveFile``). One archive fits one JDK and one classpath, so its file name is a
digest of both; archives live beside the jar cache and outlive a checkout. A JVM that cannot
map an archive (another JDK, a changed jar) runs without it, quietly.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from geokafka.artifacts.jars import cache_root, jar_set_digest

ARCHIVE_SUFFIX = ".jsa"


def archive_dir() -> Path:
    """The folder of every archive (beside the jar cache, ``$GEOKAFKA_CACHE``)."""
    return cache_root().parent / "class-archives"


def java_identity() -> str:
    """The JDK that will run: its real path and the size of its VM (an upgrade changes both)."""
    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else Path(shutil.which("java") or "java")
    real = java.resolve()
    libjvm = next(iter(sorted(real.parent.parent.glob("lib/server/libjvm.so"))), real)
    return f"{real}:{libjvm.stat().st_size if libjvm.exists() else 0}"


def archive_path(kind: str, jars: Iterable[Path]) -> Path:
    """Where the ``kind`` archive for this JDK and these jars lives (it may not exist)."""
    return archive_dir() / f"{kind}-{jar_set_digest(java_identity(), jars)}{ARCHIVE_SUFFIX}"


UNUSED_FOR_S = 7 * 24 * 3600.0
"""A build deletes archives of its kind that no JVM used for this long (another JDK, old jars)."""


def use_options(path: Path) -> list[str]:
    """JVM options that map the archive at ``path`` when it has been built (none otherwise); marks
    it as used, so a build for another checkout does not delete it."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return []
    except OSError:
        pass  # a read-only cache: still usable
    # -Xlog:cds=off: a JVM that cannot map the archive says so on stdout; it then just runs without it.
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def build(path: Path, train: Callable[[Path], bool]) -> Path | None:
    """Build the archive at ``path`` unless it exists; None when the training run failed.

    ``train(staging)`` runs a JVM with ``-XX:ArchiveClassesAtExit=staging`` and lets it exit
    cleanly (the JVM writes the archive as it exits); the result is renamed into place only
    when complete, so a reader never maps half an archive. Archives of the same kind that no
    JVM used for :data:`UNUSED_FOR_S` are deleted (another JDK or jar set); those of other
    checkouts on the machine, each with its own jars, stay while they are in use.
    """
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # one build per archive: a process that finds another building it (./run's build beside the
    # tests, and a `./run geokafka` started meanwhile) waits for that one instead of repeating it
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return path
        return _build_locked(path, train)


def _build_locked(path: Path, train: Callable[[Path], bool]) -> Path | None:
    """:func:`build`'s work, under its lock."""
    kind = path.name.rsplit("-", 1)[0]
    for old in path.parent.glob(f"{kind}-*{ARCHIVE_SUFFIX}"):
        try:
            if time.time() - old.stat().st_mtime > UNUSED_FOR_S:
                old.unlink()
        except FileNotFoundError:
            pass
    fd, name = tempfile.mkstemp(prefix=f".training-{kind}-", suffix=ARCHIVE_SUFFIX, dir=path.parent)
    os.close(fd)
    staging = Path(name)
    staging.unlink()  # the JVM creates it at exit
    try:
        if not train(staging) or not staging.exists() or staging.stat().st_size == 0:
            return None
        os.replace(staging, path)
        return path
    finally:
        staging.unlink(missing_ok=True)
