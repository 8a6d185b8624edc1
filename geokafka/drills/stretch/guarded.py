"""The stretch drill with `geokafka guard` running: the DC loss handled automatically, then undone.

The guard runs in a thread from before the kill, exactly as `geokafka guard` would (same loop,
same journal on the drill cluster). After the observation window the killed DC's processes
are started again and the drill waits until the guard has restored min.insync.replicas and
the preferred leaders, and says how long each step took.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from geokafka.control.connection import cluster_connection
from geokafka.drills.stretch import stretch_cluster as sc
from geokafka.drills.stretch.traffic import quiet_client
from geokafka.errors import ClusterUnreachableError
from geokafka.guard.decide import GuardSettings
from geokafka.guard.loop import GuardRun, run_guard
from geokafka.guard.model import ActionKind
from geokafka.planning.plan import StretchPlan
from geokafka.topology.schema import Cluster


class GuardThread:
    """`run_guard` on the drill cluster in a background thread; what it said, with monotonic times."""

    def __init__(self, cluster: sc.DrillCluster, plan: StretchPlan, grace_s: float, on_event: Any) -> None:
        self.grace_s = grace_s
        self.said: list[tuple[float, str]] = []
        self.run: GuardRun | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._guarding = threading.Event()
        self._on_event = on_event
        conn = cluster_connection(cluster.spec.name, Cluster(bootstrap=cluster.spec.bootstrap))
        quorum = {dc.name: plan.verdict_for_dc(dc.name).quorum_survives for dc in plan.layout.dcs}
        self._thread = threading.Thread(
            target=self._main, args=(conn, quorum), name="geokafka-drill-guard", daemon=True)
        self._thread.start()

    def _main(self, conn: Any, quorum: dict[str, bool]) -> None:
        try:
            self.run = run_guard(conn, GuardSettings(grace_s=self.grace_s), quorum, stop=self._stop, say=self._say,
                                 watching=self._guarding)
        except BaseException as exc:  # noqa: BLE001 - reported by the drill
            self.error = exc
            self._say(f"guard stopped on an error: {exc}")
        finally:
            self._guarding.set()

    def _say(self, text: str) -> None:
        self.said.append((time.monotonic(), text))
        self._on_event(f"guard: {text}")

    def wait_guarding(self, timeout_s: float) -> None:
        """Wait until the guard has read its journal and watches the cluster (a drill kills nothing before)."""
        if not self._guarding.wait(timeout_s):
            raise ClusterUnreachableError(f"the guard did not start watching within {timeout_s:.0f} s")
        if self.error is not None:
            raise self.error

    def first_done(self, kind: ActionKind) -> float | None:
        """When (monotonic) the guard first applied an action of ``kind``, from its run's action list."""
        if self.run is None:
            return None
        return next((a.elapsed_s for a in self.run.actions if a.action.kind == kind and a.outcome == "done"), None)

    def stop(self) -> None:
        """Stop the guard and wait for it."""
        self._stop.set()
        self._thread.join(timeout=30)


def dc_returns(cluster: sc.DrillCluster, plan: StretchPlan, dc: str, guard: GuardThread,
               opts: Any, on_event: Any) -> dict[str, Any]:
    """Start the lost DC again and wait until the guard restored settings and leaders."""
    started = time.monotonic()
    on_event(f"{dc} comes back: starting its processes again")
    sc.start_nodes(cluster, list(cluster.nodes_in(dc)), opts.start_timeout_s)
    up = time.monotonic()
    expected = {t.name: t.config.min_insync_replicas for t in plan.topics}
    admin = AdminClient(quiet_client(cluster.spec.bootstrap, "return"))
    deadline = up + opts.return_timeout_s
    settings_at = leaders_at = None
    while time.monotonic() < deadline and (settings_at is None or leaders_at is None):
        if settings_at is None and _min_isr(admin, set(expected)) == expected:
            settings_at = time.monotonic()
        if leaders_at is None and settings_at is not None and _preferred_leaders(admin, set(expected)):
            leaders_at = time.monotonic()
        time.sleep(0.5)
    restored = settings_at is not None and leaders_at is not None
    on_event(f"after {dc} came back: min.insync.replicas {'restored' if settings_at else 'NOT restored'}, "
             f"preferred leaders {'back' if leaders_at else 'NOT back'}")
    return {
        "dc_started_s": round(up - started, 2),
        "min_isr_restored_after_s": None if settings_at is None else round(settings_at - up, 2),
        "leaders_restored_after_s": None if leaders_at is None else round(leaders_at - up, 2),
        "restored": restored,
        "at": up,
    }


def _min_isr(admin: AdminClient, topics: set[str]) -> dict[str, int]:
    out = {}
    for resource, future in admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics],
                                                   request_timeout=10).items():
        out[resource.name] = int(future.result(timeout=15)["min.insync.replicas"].value)
    return out


def _preferred_leaders(admin: AdminClient, topics: set[str]) -> bool:
    meta = admin.list_topics(timeout=10).topics
    return all(p.leader == p.replicas[0] and set(p.isrs) == set(p.replicas)
               for t in topics for p in meta[t].partitions.values())


def guard_report(guard: GuardThread, returned: dict[str, Any] | None, kill_time: float, opts: Any) -> dict[str, Any]:
    """The guard's part of the drill report: when it decided, acted and undid."""
    lowered = guard.first_done("lower-min-isr")
    return {
        "grace_s": guard.grace_s,
        "said": [{"at_s_after_kill": round(at - kill_time, 2), "text": text} for at, text in guard.said],
        "lowered_after_kill_s": None if lowered is None else round(lowered - kill_time, 2),
        "error": None if guard.error is None else str(guard.error),
        "dc_return": None if returned is None else {k: v for k, v in returned.items() if k != "at"},
    }
