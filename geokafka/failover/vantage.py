"""Is the source site really gone, or only out of reach from here? The mirror's view beside the operator's.

`failover` declares a site lost because it cannot reach the source from where it runs. The flow's mirror
runs elsewhere (at the target's site: see the operations docs) and records on the target what it sees of the
source every ``rpo.observe_ms``. While that record keeps getting newer, the mirror still reaches the source:
what `failover` meets is a partition between the operator and the source, not a lost site, and failing over
would split the business in two. A mirror whose looks fail, stopped, or gone says nothing either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geokafka.control.flow_states import LIVE_STATES
from geokafka.control.state_store import StateSnapshot

FRESH_S = 10.0
"""A look at the source younger than this, with no failed look after it, from a mirror whose heartbeat is live:
the mirror may still reach the source (its looks come every ``rpo.observe_ms``; a look at a source that is gone
fails within its time-out of a few seconds and is recorded as failed)."""

WAIT_S = 5.0
"""How long `failover` waits for the mirror's next look (or a failed one) before it decides the mirror lost the
source too: a site lost a second ago was seen a second ago."""

LIVE_HEARTBEAT_S = 15.0
"""A mirror whose heartbeat (every 5 s) is older than this gives no second view."""


@dataclass(frozen=True)
class MirrorView:
    """What the flow's mirror last recorded of its source, as of ``now_ms``."""

    observed_at_ms: int | None
    """Its last look that reached the source."""
    failed_at_ms: int | None
    """A later look that did not (None: none did)."""
    heartbeat_state: str | None
    heartbeat_age_s: float | None
    now_ms: int

    @property
    def observed_age_s(self) -> float | None:
        """Seconds since the last look that reached the source."""
        return None if self.observed_at_ms is None else max(0.0, (self.now_ms - self.observed_at_ms) / 1000)

    @property
    def lost_source(self) -> bool:
        """The mirror's latest look at the source failed."""
        return self.failed_at_ms is not None

    @property
    def live(self) -> bool:
        """The mirror writes heartbeats: a live state, recorded no longer than :data:`LIVE_HEARTBEAT_S` ago."""
        return self.heartbeat_state in LIVE_STATES and self.heartbeat_age_s is not None \
            and self.heartbeat_age_s <= LIVE_HEARTBEAT_S

    @property
    def might_reach_source(self) -> bool:
        """A live mirror whose last look, younger than :data:`FRESH_S`, reached the source and none failed since."""
        age = self.observed_age_s
        return self.live and not self.lost_source and age is not None and age < FRESH_S

    def describe(self, source: str) -> str:
        """One phrase, e.g. ``the mirror last reached nyc 0.4 s ago`` or ``the mirror lost nyc 12.0 s ago``."""
        if self.observed_at_ms is None:
            return f"the mirror has recorded no look at {source}"
        if self.failed_at_ms is not None:
            return f"the mirror lost {source} {max(0.0, (self.now_ms - self.failed_at_ms) / 1000):.1f} s ago"
        return f"the mirror last reached {source} {self.observed_age_s:.1f} s ago"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        age = self.observed_age_s
        return {"observed_at_ms": self.observed_at_ms, "observed_age_s": None if age is None else round(age, 3),
                "failed_at_ms": self.failed_at_ms, "heartbeat_state": self.heartbeat_state,
                "heartbeat_age_s": None if self.heartbeat_age_s is None else round(self.heartbeat_age_s, 3)}


def mirror_view(state: StateSnapshot, flow: str, now_ms: int) -> MirrorView:
    """The mirror's view of ``flow``'s source in ``state`` (pure)."""
    observation = state.source_ends(flow)
    heartbeat = state.heartbeat(flow)
    return MirrorView(
        observed_at_ms=None if observation is None else observation.at_ms,
        failed_at_ms=None if observation is None else observation.failed_at_ms,
        heartbeat_state=None if heartbeat is None else heartbeat.state,
        heartbeat_age_s=None if heartbeat is None else max(0.0, (now_ms - heartbeat.at_ms) / 1000),
        now_ms=now_ms,
    )


def mirror_still_reaches(read: Callable[[], StateSnapshot], flow: str, wait_s: float = WAIT_S,
                         clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                         ) -> MirrorView | None:
    """The mirror's view when it still reaches the source, else None.

    A live mirror's look younger than :data:`FRESH_S` with no failed look after it may be the last one before the
    site died: read the state again (every 0.2 s, up to ``wait_s``) until a newer look shows up (the mirror still
    reaches the source) or a failed one does, or none comes (it lost the source too, or is gone itself).
    """
    first = mirror_view(read(), flow, int(clock() * 1000))
    if not first.might_reach_source:
        return None
    deadline = clock() + wait_s
    while clock() < deadline:
        sleep(0.2)
        view = mirror_view(read(), flow, int(clock() * 1000))
        if view.lost_source:
            return None
        if view.observed_at_ms is not None and first.observed_at_ms is not None \
                and view.observed_at_ms > first.observed_at_ms:
            return view
    return None
