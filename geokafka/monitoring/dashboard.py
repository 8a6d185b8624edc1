"""``geokafka dashboard``: a local web page with lag and throughput over time.

A background thread samples the status every ``interval_s`` and keeps a bounded history;
a stdlib HTTP server serves the page (plain HTML/JS/SVG, nothing fetched from the internet),
``/api/status`` (JSON the page polls), ``/metrics`` (Prometheus text) and ``/api/flows/<flow>``
(where a flow's applications connect now, as `geokafka where --json` says, read on each request).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import unquote

from geokafka.client import where
from geokafka.control.connection import connection
from geokafka.control.state_stores import StateStores
from geokafka.errors import EnvironmentError_, GeokafkaError, TopologyError
from geokafka.monitoring.collect import StatusCollector
from geokafka.monitoring.metrics import CONTENT_TYPE, render_metrics
from geokafka.monitoring.throughput import DEFAULT_MAX_AGE_S, DEFAULT_WINDOW_S, History
from geokafka.topology.schema import Topology

log = logging.getLogger(__name__)

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


class StatusSampler:
    """Samples status in a background thread into a bounded :class:`History`."""

    def __init__(
        self,
        topology: Topology,
        flows: list[str] | None = None,
        interval_s: float = 2.0,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.collector = StatusCollector(topology, flows)
        self.history = History(max_age_s, window_s)
        self.interval_s = interval_s
        self.last_error: str | None = None
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample_once(self) -> None:
        """Take one observation now (errors are kept for the page, never raised)."""
        try:
            self.history.add(self.collector.collect())
            self.samples += 1
            self.last_error = None
        except GeokafkaError as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            log.exception("status sample failed")
            self.last_error = f"{type(exc).__name__}: {exc}"

    def start(self) -> None:
        """Start sampling every ``interval_s``."""
        def run() -> None:
            while not self._stop.is_set():
                started = time.monotonic()
                self.sample_once()
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

        self._thread = threading.Thread(target=run, name="status-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and close the Kafka clients."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)  # a look at a cluster that does not answer is left to its time-outs
            if self._thread.is_alive():
                return  # its clients go with the process
        self.collector.close()

    def api_status(self) -> dict[str, Any]:
        """What ``/api/status`` returns: the latest report, the history series and sampling info."""
        latest = self.history.latest
        return {
            "now_ms": int(time.time() * 1000),
            "interval_s": self.interval_s,
            "window_s": self.history.window_s,
            "max_age_s": self.history.max_age_s,
            "samples": self.samples,
            "error": self.last_error,
            "report": None if latest is None else latest.to_dict(),
            "history": self.history.series(),
        }


_FLOWS = "/api/flows/"
WHERE_TIMEOUT_S = 5.0
"""How long ``/api/flows/<flow>`` waits for the flow's target (then 503)."""


def where_response(topology: Topology, flow: str, stores: StateStores | None = None) -> tuple[int, dict[str, Any]]:
    """``/api/flows/<flow>``: (HTTP status, JSON body); 404 for an unknown flow, 503 when its target cannot be read.
    ``stores``: the dashboard's state stores (read incrementally; a store of its own for the call otherwise)."""
    if flow not in topology.flows:
        return 404, {"error": f"unknown flow {flow!r}", "flows": sorted(topology.flows)}
    try:
        store = None if stores is None else stores.of(connection(topology, topology.flows[flow].target))
        return 200, where(topology, flow, timeout_s=WHERE_TIMEOUT_S, store=store)
    except TopologyError as exc:
        return 404, {"error": str(exc)}
    except GeokafkaError as exc:
        return 503, {"error": f"{type(exc).__name__}: {exc}"}


def _handler(sampler: StatusSampler) -> type[BaseHTTPRequestHandler]:
    topology = sampler.collector.topology

    class Handler(BaseHTTPRequestHandler):
        server_version = "geokafka-dashboard"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/api/status":
                self._send(200, "application/json", json.dumps(sampler.api_status(), default=str).encode())
            elif path == "/metrics":
                self._send(200, CONTENT_TYPE, render_metrics(sampler.history.latest).encode())
            elif path.startswith(_FLOWS) and path.count("/") == 3:
                code, answer = where_response(topology, unquote(path[len(_FLOWS):]), sampler.collector.stores)
                self._send(code, "application/json", json.dumps(answer).encode())
            elif path == "/healthz":
                self._send(200, "text/plain", b"ok\n")
            elif path in _STATIC:
                name, kind = _STATIC[path]
                body = resources.files("geokafka.monitoring").joinpath("web", name).read_bytes()
                self._send(200, kind, body)
            else:
                self._send(404, "text/plain", b"not found\n")

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return Handler


class Dashboard:
    """The sampler and the HTTP server together; ``with Dashboard(...) as d:`` serves in threads."""

    def __init__(
        self, topology: Topology, flows: list[str] | None = None, host: str = "127.0.0.1", port: int = 8088,
        interval_s: float = 2.0, max_age_s: float = DEFAULT_MAX_AGE_S, window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.sampler = StatusSampler(topology, flows, interval_s, max_age_s, window_s)
        try:
            self.server = ThreadingHTTPServer((host, port), _handler(self.sampler))
        except OSError as exc:
            raise EnvironmentError_(f"dashboard: cannot listen on {host}:{port}: {exc.strerror}") from None
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Where the page is served."""
        host, port = self.server.server_address[:2]
        shown = host.decode() if isinstance(host, bytes) else host
        return f"http://{shown}:{port}/"

    def start(self) -> Dashboard:
        """Start sampling and serving in background threads."""
        self.sampler.start()
        self._thread = threading.Thread(target=self.server.serve_forever, name="dashboard-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and sampling."""
        self.server.shutdown()
        self.server.server_close()
        self.sampler.stop()

    def __enter__(self) -> Dashboard:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
