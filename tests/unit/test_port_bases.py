"""The test workers' port bases and the shared clusters' base: no two share a port, and none
takes a fixed port of the suite."""

from __future__ import annotations

from kafka_util import DEFAULT_PORT_BASES, SHARED_PORT_BASE

# kafka_util.port_base: east +92..94, west +1092, south +2092, SASL +5092/+6092, the link-cut DC +7092;
# each with its controller at +100
OFFSETS = [o + c for o in (92, 93, 94, 1092, 2092, 5092, 6092, 7092) for c in (0, 100)]
# conftest's shared clusters: east +92..94, west +1092, south +2092, controllers +100
SHARED_OFFSETS = [o + c for o in (92, 93, 94, 1092, 2092) for c in (0, 100)]
FIXED = {*range(17092, 17095), *range(17192, 17195), 18092, 18192,  # the demo
         24092, 24192, 25092, 25192,  # the bench
         *range(27500, 27900), *range(31000, 32000)}  # `geokafka up` in test_cli_clusters, the drills
EPHEMERAL_FIRST = 32768


def test_every_worker_has_ports_of_its_own() -> None:
    seen: dict[int, int] = {}
    sets = [(int(b), OFFSETS) for b in DEFAULT_PORT_BASES.split(",")] + [(SHARED_PORT_BASE, SHARED_OFFSETS)]
    for base, offsets in sets:
        for port in (base + o for o in offsets):
            assert 1024 <= port < EPHEMERAL_FIRST, (base, port)
            assert port not in FIXED, (base, port)
            assert seen.setdefault(port, base) == base, f"port {port}: bases {seen[port]} and {base}"


def test_every_link_cut_namespace_has_a_subnet_of_its_own() -> None:
    subnets = [(int(b) // 100) % 256 for b in DEFAULT_PORT_BASES.split(",")]
    assert len(set(subnets)) == len(subnets)
