"""geokafka's version: one string (``geokafka.__version__``), printed by ``geokafka --version``, written into the
wheel (pyproject.toml reads it) and matching CHANGELOG.md's sections."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

import geokafka
from geokafka.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
# semantic versioning, spelled as PEP 440 spells a pre-release (0.2.0.dev0 is SemVer's 0.2.0-dev.0)
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(?:\.dev|a|b|rc)\d+)?$")


def test_geokafka_version_prints_the_packages_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output == f"geokafka {geokafka.__version__}\n"


def test_the_wheel_takes_its_version_from_the_package() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'version = {attr = "geokafka.__version__"}' in pyproject


def test_the_changelog_matches_the_version() -> None:
    """A release (X.Y.Z) is the changelog's newest section; a pre-release of X.Y.Z is still [Unreleased], above a
    released version older than X.Y.Z."""
    found = _VERSION.match(geokafka.__version__)
    assert found, f"{geokafka.__version__} is not semantic versioning"
    base = tuple(int(part) for part in found.groups())
    sections = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert sections[0] == "Unreleased", sections
    released = [tuple(int(p) for p in s.split(".")) for s in sections[1:]]
    assert released == sorted(released, reverse=True), sections
    if geokafka.__version__ == ".".join(map(str, base)):
        assert released[0] == base, (geokafka.__version__, sections)
    else:
        assert released[0] < base, (geokafka.__version__, sections)
