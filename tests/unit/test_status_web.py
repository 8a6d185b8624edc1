"""The dashboard's static files ship with the package and fetch nothing from the internet (no broker)."""

from __future__ import annotations

import re
from importlib import resources

WEB = resources.files("geokafka.operations").joinpath("web")


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
