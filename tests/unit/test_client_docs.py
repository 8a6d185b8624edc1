"""docs/clients.md follows the code: its Python examples compile and type-check (mypy --strict) against the
package, its JSON is what `where` answers, its table names every setting; the package's surface is curated."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from client_fakes import FLOW, topology

import geokafka.client
from geokafka.client import FollowingConsumer, FollowingProducer
from geokafka.client.where import where
from geokafka.control.state_store import InMemoryStateStore

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "clients.md").read_text(encoding="utf-8")
PYTHON = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)
FOR_TESTS = {"watcher", "consumer_factory", "producer_factory", "release", "clock"}


def test_the_page_has_python_examples_and_they_compile() -> None:
    assert len(PYTHON) >= 2
    for number, example in enumerate(PYTHON):
        compile(example, f"docs/clients.md example {number}", "exec")


def test_the_python_examples_type_check_against_the_package(tmp_path: Path) -> None:
    files = []
    for number, example in enumerate(PYTHON):
        files.append(tmp_path / f"example_{number}.py")
        files[-1].write_text(example)
    env = {**os.environ, "MYPYPATH": str(REPO)}
    checked = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir",
                              str(tmp_path / "cache"), *map(str, files)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_pages_json_is_what_where_answers() -> None:
    [shown] = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", PAGE, re.DOTALL)]
    answer = where(topology(), FLOW, ["orders"], store=InMemoryStateStore())
    assert list(shown) == list(answer)


@pytest.mark.parametrize("client", [FollowingConsumer, FollowingProducer])
def test_the_page_names_every_setting_of_the_clients(client: type) -> None:
    keywords = [name for name, p in inspect.signature(client).parameters.items() if p.kind is p.KEYWORD_ONLY]
    for name in set(keywords) - FOR_TESTS:
        assert f"| `{name}`" in PAGE, f"docs/clients.md does not describe {client.__name__}'s {name}"


def test_the_package_exports_what_applications_import() -> None:
    assert sorted(geokafka.client.__all__) == geokafka.client.__all__
    for name in geokafka.client.__all__:
        assert getattr(geokafka.client, name).__doc__, name
