"""Helpers for tests that run flows: a topology with flows, a mirror in a background thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from geokafka.errors import GeokafkaError
from geokafka.pipeline.mirror import mirror
from geokafka.pipeline.runner import FlowRunner, PartitionProgress
from geokafka.topology.schema import Flow, Topology


def with_flows(base: Topology, **flows: dict[str, Any]) -> Topology:
    """``base`` plus the given flows (keyword = flow name, value = Flow fields)."""
    return base.model_copy(update={"flows": {name: Flow(**spec) for name, spec in flows.items()}})


@contextmanager
def running_mirror(
    topology: Topology, flows: list[str] | None = None, expect_flow_errors: bool = False
) -> Iterator[dict[str, FlowRunner]]:
    """Run ``mirror`` in a thread (sharing the test SparkSession) until the block ends.

    ``mirror`` raises when every flow stopped on an error; tests that expect that pass
    ``expect_flow_errors`` and check the runners' errors themselves.
    """
    stop = threading.Event()
    runners: dict[str, FlowRunner] = {}
    failure: list[BaseException] = []
    last_error: dict[str, str] = {}

    def on_tick(rs: list[FlowRunner]) -> None:
        runners.update({r.name: r for r in rs})
        for r in rs:
            if r.error is not None and str(r.error) != last_error.get(r.name):
                last_error[r.name] = str(r.error)
                print(f"[mirror] flow {r.name}: {r.status}: {r.error}", flush=True)

    def run() -> None:
        try:
            mirror(topology, flows, on_tick=on_tick, stop_event=stop)
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test below
            failure.append(exc)

    thread = threading.Thread(target=run, name="mirror", daemon=True)
    thread.start()
    try:
        yield runners
    finally:
        stop.set()
        thread.join(120)
    if failure and not (expect_flow_errors and isinstance(failure[0], GeokafkaError)):
        raise AssertionError(f"mirror failed: {type(failure[0]).__name__}: {failure[0]}") from failure[0]


def wait_for(condition: Callable[[], Any], timeout_s: float = 60.0, what: str = "condition") -> Any:
    """Poll ``condition`` until truthy; fail the test with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def wait_progress_at(runners: dict[str, FlowRunner], flow: str, topic: str, ends: dict[int, int],
                     timeout_s: float = 60.0) -> None:
    """Until ``flow``'s committed progress on ``topic`` sits at ``ends`` (partition -> next source
    offset): the driver saw every record committed on the target, so nothing is left in flight."""
    none = PartitionProgress()
    wait_for(lambda: flow in runners and all(runners[flow].progress.get((topic, p), none).next_offset == end
                                             for p, end in ends.items()),
             timeout_s, f"flow {flow}'s progress at the source's end")
