"""A local cluster in a network namespace: its addresses, config and launch command (nothing is started)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from geokafka.infra import local_cluster
from geokafka.infra.local_cluster import LocalClusterSpec, NodeSpec, server_properties
from geokafka.infra.netns import NetNamespace


def _spec(tmp_path: Path) -> LocalClusterSpec:
    return LocalClusterSpec("far", tmp_path, (NodeSpec(1, True, True, None, 28092, 28192),))


def test_namespace_addresses_and_interface_names() -> None:
    ns = NetNamespace("gk-linkcut-21000", 210)
    assert (ns.host_ip, ns.ns_ip) == ("10.231.210.1", "10.231.210.2")
    assert max(len(ns.host_veth), len(ns.ns_veth)) <= 15  # the kernel's limit for interface names
    with pytest.raises(ValueError):
        NetNamespace("x", 256)


def test_a_namespaced_cluster_binds_and_advertises_its_namespace_address(tmp_path: Path) -> None:
    spec = replace(_spec(tmp_path), netns="gk-far", host="10.231.7.2")
    props = server_properties(spec, spec.node(1))
    assert props["listeners"] == "PLAINTEXT://10.231.7.2:28092,CONTROLLER://10.231.7.2:28192"
    assert props["advertised.listeners"] == "PLAINTEXT://10.231.7.2:28092"
    assert props["controller.quorum.voters"] == "1@10.231.7.2:28192"
    assert spec.bootstrap == "10.231.7.2:28092"
    assert _spec(tmp_path).bootstrap == "127.0.0.1:28092"


def test_a_namespaced_node_is_launched_through_ip_netns_exec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[list[str]] = []

    def fake_start(cmd: list[str], *_: Any) -> int:
        launched.append(cmd)
        return 1

    monkeypatch.setattr(local_cluster, "start_process", fake_start)
    plain = _spec(tmp_path)
    local_cluster._launch_node(plain, plain.node(1), "cp")
    local_cluster._launch_node(replace(plain, netns="gk-far"), plain.node(1), "cp")
    assert launched[0][0] == "java"
    assert launched[1] == ["ip", "netns", "exec", "gk-far", *launched[0]]


def test_listening_rows_of_a_proc_net_tcp_table() -> None:
    rows = [
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
        "   0: 02E7E70A:6DBC 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1",
        "   1: 02E7E70A:6DBC 01E7E70A:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 2",
    ]
    assert local_cluster._listening(rows) == {0x6DBC}
