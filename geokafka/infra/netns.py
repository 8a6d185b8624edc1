"""A named network namespace linked to the root namespace by a veth pair: a "remote DC" on this machine.

The pair's root end gets ``10.231.X.1/24``, its namespace end ``10.231.X.2/24``. Cutting the
link downs the namespace end: the root end keeps its route and a permanent neighbour entry
for the namespace address, so packets towards the namespace are silently dropped (no ARP
failure, no "no route to host", no RST), as on a cut WAN link. Needs root and ``ip`` (iproute2).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass

from geokafka.errors import EnvironmentError_


@dataclass(frozen=True)
class NetNamespace:
    """Namespace ``name`` on subnet ``10.231.<subnet>.0/24``."""

    name: str
    subnet: int

    def __post_init__(self) -> None:
        if not 0 <= self.subnet <= 255:
            raise ValueError(f"subnet {self.subnet} is not 0..255")

    @property
    def host_ip(self) -> str:
        """The root namespace's address on the link."""
        return f"10.231.{self.subnet}.1"

    @property
    def ns_ip(self) -> str:
        """The namespace's address on the link: what its servers bind and advertise."""
        return f"10.231.{self.subnet}.2"

    @property
    def host_veth(self) -> str:
        """Root end of the veth pair (named by subnet: interface names have 15 characters at most)."""
        return f"gkv{self.subnet}h"

    @property
    def ns_veth(self) -> str:
        """Namespace end of the veth pair."""
        return f"gkv{self.subnet}n"

    def exists(self) -> bool:
        """True if the namespace is there."""
        return self.name in namespaces()

    def create(self) -> None:
        """Create namespace and link afresh; a leftover of a crashed run is deleted first."""
        self.delete()
        try:
            _ip("netns", "add", self.name)
            _ip("link", "add", self.host_veth, "type", "veth", "peer", "name", self.ns_veth)
            _ip("link", "set", self.ns_veth, "netns", self.name)
            _ip("addr", "add", f"{self.host_ip}/24", "dev", self.host_veth)
            _ip("link", "set", self.host_veth, "up")
            _ip("-n", self.name, "addr", "add", f"{self.ns_ip}/24", "dev", self.ns_veth)
            _ip("-n", self.name, "link", "set", "lo", "up")
            self.link_up()
            mac = _ip("-n", self.name, "-br", "link", "show", self.ns_veth).split()[2]
            _ip("neigh", "replace", self.ns_ip, "lladdr", mac, "nud", "permanent", "dev", self.host_veth)
        except BaseException:
            self.delete()
            raise

    def delete(self) -> None:
        """Kill what still runs inside, remove the veth pair and the namespace; no-op when absent."""
        if self.exists():
            self._kill_inside()
        _ip("link", "del", self.host_veth, check=False)  # takes its peer along
        if self.exists():
            _ip("netns", "del", self.name)

    def link_down(self) -> None:
        """Cut the link: from now on packets between the namespaces vanish."""
        _ip("-n", self.name, "link", "set", self.ns_veth, "down")

    def link_up(self) -> None:
        """Restore the link."""
        _ip("-n", self.name, "link", "set", self.ns_veth, "up")

    def _kill_inside(self) -> None:
        """SIGKILL every process in the namespace (a crashed run's brokers) and wait until gone."""
        pids = [int(p) for p in _ip("netns", "pids", self.name, check=False).split()]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10.0
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if os.path.exists(f"/proc/{p}") and not _zombie(p)]
            time.sleep(0.05)


def available() -> tuple[bool, str]:
    """(True, "") if namespaces and veth pairs can be made here, else (False, the reason)."""
    if os.geteuid() != 0:
        return False, "network namespaces need root"
    if shutil.which("ip") is None:
        return False, "`ip` (iproute2) is not installed"
    tag = uuid.uuid4().hex[:8]
    name, veth = f"gk-probe-{tag}", f"gkp{tag}"
    try:
        _ip("netns", "add", name)
        _ip("link", "add", veth, "type", "veth", "peer", "name", f"gkq{tag}")
    except EnvironmentError_ as exc:
        return False, str(exc)
    finally:
        _ip("link", "del", veth, check=False)
        _ip("netns", "del", name, check=False)
    return True, ""


def listening_tables(name: str) -> list[str]:
    """The rows of ``/proc/net/tcp`` and ``/proc/net/tcp6`` as seen inside namespace ``name``
    (tcp6 is absent where IPv6 is off, so cat's status is not checked)."""
    return _ip("netns", "exec", name, "cat", "/proc/net/tcp", "/proc/net/tcp6", check=False).splitlines()


def namespaces() -> set[str]:
    """Names of the existing namespaces."""
    return {line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()}


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS``; its stdout. With ``check``, a failure is an :class:`EnvironmentError_`."""
    try:
        proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentError_(f"ip {' '.join(args)}: {exc}") from None
    if check and proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["exit status " + str(proc.returncode)])[-1]
        raise EnvironmentError_(f"ip {' '.join(args)}: {detail}")
    return proc.stdout
