"""The package layout: every module imports, and every package says what it is for."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import geokafka

MODULES = sorted(m.name for m in pkgutil.walk_packages(geokafka.__path__, "geokafka.") if m.name != "geokafka.__main__")
PACKAGES = sorted(m.name for m in pkgutil.walk_packages(geokafka.__path__, "geokafka.") if m.ispkg)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name: str) -> None:
    importlib.import_module(name)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_says_what_it_is_for(name: str) -> None:
    doc = (importlib.import_module(name).__doc__ or "").strip()
    assert len(doc.split()) >= 6, f"{name}/__init__.py needs a docstring that says what the package is for"
