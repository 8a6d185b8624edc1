"""The dashboard's static files ship with the package and fetch nothing from the internet (no broker)."""

from __future__ import annotations

import re
from importlib import resources

WEB = resources.files("geokafka.monitoring").joinpath("web")


def test_page_files_are_packaged():
    for name in ("index.html", "app.js", "style.css"):
        assert WEB.joinpath(name).read_text(encoding="utf-8").strip(), name


def test_page_loads_nothing_from_another_host():
    for name in ("index.html", "app.js", "style.css"):
        text = WEB.joinpath(name).read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), name
        assert "@import" not in text and "fetch(\"http" not in text, name


def test_page_polls_the_api_it_is_served_with():
    js = WEB.joinpath("app.js").read_text(encoding="utf-8")
    assert 'fetch("/api/status"' in js


def test_script_declares_each_top_level_name_once():
    """A second top-level ``function esc`` next to ``const esc`` is a SyntaxError that blanks the page."""
    js = WEB.joinpath("app.js").read_text(encoding="utf-8")
    names = re.findall(r"^(?:async\s+)?(?:function|const|let|var)\s+([A-Za-z_$][\w$]*)", js, flags=re.MULTILINE)
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_script_parses_when_node_is_installed(tmp_path):
    import shutil
    import subprocess

    import pytest

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the dashboard's browser test renders the page instead")
    script = tmp_path / "app.js"
    script.write_text(WEB.joinpath("app.js").read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run([node, "--check", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
