"""The test workers' port bases and the shared clusters' base: no two share a port, and none
takes a fixed port of the suite."""

from __future__ import annotations

from kafka_util import DEFAULT_PORT_BASES, SHARED_PORT_BASE

# kafka_util.port_base: east +92..94, west +1092, south +2092, the fan-in test's north +3092, the restart test's
# target +4092, SASL +5092/+6092, the link-cut DC +7092, the partition-refusal cluster +8092, the policy cluster
# +9092; each with its controller at +100 (every `port_base() + N` of the tests: test_offsets_are_all_listed)
OFFSETS = [o + c for o in (92, 93, 94, 1092, 2092, 3092, 4092, 5092, 6092, 7092, 8092, 9092) for c in (0, 100)]
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


def test_offsets_are_all_listed() -> None:
    """Every offset a test adds to its port base is one of OFFSETS (a new one missing here slipped past the checks
    above: the restart test's +4092 was the bench's 25092 on worker gw0)."""
    import re
    from pathlib import Path

    tests = Path(__file__).parents[1]
    used = {int(m) for path in tests.rglob("*.py")
            for m in re.findall(r"(?:port_base\(\)|\bbase) \+ (\d+)", path.read_text())}
    assert used and used <= set(OFFSETS), sorted(used - set(OFFSETS))
