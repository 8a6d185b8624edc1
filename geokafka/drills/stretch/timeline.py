"""The drill's files: a JSON report and a PNG timeline of acknowledged writes per second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def write_json(report: dict[str, Any], path: Path) -> Path:
    """Write ``report`` as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def write_png(path: Path, *args: Any, **kwargs: Any) -> Path:
    """:func:`timeline_figure` saved as a PNG at ``path``."""
    import matplotlib.pyplot as plt

    fig = timeline_figure(*args, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def timeline_figure(
    title: str,
    acked_per_s: list[int],
    consumed_per_s: list[int],
    kill_at_s: float,
    kill_label: str,
    resumed_at_s: float | None,
    recovery_at_s: float | None = None,
    first_ack_at_s: float | None = None,
) -> Figure:
    """Acked (and consumed) records per second, the kill and the moment writes resumed marked.

    ``resumed_at_s`` is the RTO's end (every partition expected back accepted a write sent after the
    kill); ``first_ack_at_s``, the first such write on any partition, is where the curve picks up,
    so it gets a marker of its own when it comes earlier.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4), dpi=100)
    seconds = list(range(len(acked_per_s)))
    ax.step(seconds, acked_per_s, where="post", label="acknowledged writes/s", color="tab:blue", linewidth=1.8)
    if consumed_per_s:
        ax.step(seconds, consumed_per_s, where="post", label="consumed/s", color="tab:gray", linewidth=1,
                alpha=0.7)
    ax.axvline(kill_at_s, color="tab:red", linewidth=2, label=kill_label)
    if recovery_at_s is not None:
        ax.axvline(recovery_at_s, color="tab:orange", linestyle=":", linewidth=2, label="manual steps start")
    if first_ack_at_s is not None and (resumed_at_s is None or resumed_at_s - first_ack_at_s >= 0.5):
        ax.axvline(first_ack_at_s, color="tab:olive", linestyle=":", linewidth=1.5,
                   label=f"first partition writable (+{first_ack_at_s - kill_at_s:.1f} s)")
    if resumed_at_s is not None:
        ax.axvline(resumed_at_s, color="tab:green", linestyle="--", linewidth=2,
                   label=f"every partition writable (+{resumed_at_s - kill_at_s:.1f} s)")
    else:
        ax.text(kill_at_s + 0.5, max(acked_per_s or [1]) * 0.5, "writes did not resume", color="tab:red")
    busy = sorted(n for n in acked_per_s if n)
    steady = busy[len(busy) // 2] if busy else 0
    top = max(acked_per_s or [1])
    if steady and top > 3 * steady:  # a backlog flushed at once would flatten everything else
        cap = 3 * steady
        ax.set_ylim(0, cap * 1.1)
        # one label for the highest clipped second: labels on neighbouring seconds overlapped into a smear
        second = max(range(len(acked_per_s)), key=lambda i: acked_per_s[i])
        clipped = sum(1 for n in acked_per_s if n > cap)
        more = f", {clipped - 1} more seconds above {cap}" if clipped > 1 else ""
        ax.annotate(f"backlog: {top}/s at {second} s{more}", (second, cap), xytext=(-6, -4),
                    textcoords="offset points", fontsize=8, ha="right", va="top", color="tab:blue")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since traffic start")
    ax.set_ylabel("records / s")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
