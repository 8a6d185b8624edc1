"""A flow's writer compresses by default; the flow's `compression` wins over the pipeline's, which wins over the
contract's default (pure)."""

from __future__ import annotations

import pytest

from geokafka import contract
from geokafka.errors import TopologyError
from geokafka.pipeline.query import writer_config
from geokafka.topology import parse_topology

CLUSTERS = """\
clusters:
  nyc: {bootstrap: 127.0.0.1:1}
  atl: {bootstrap: 127.0.0.1:2}
"""


def config_of(flow: str, pipeline: str = "") -> dict[str, str]:
    topology = parse_topology(CLUSTERS + "flows:\n  f: {source: nyc, target: atl" + flow + "}\n" + pipeline)
    return writer_config(topology.flows["f"], topology.pipeline)


def test_the_default_is_the_contracts_and_compresses() -> None:
    assert contract.WRITER_COMPRESSION == "lz4"
    assert config_of("") == {"compression.type": "lz4"}


def test_the_flow_names_its_own_over_the_pipelines() -> None:
    pipeline = "pipeline:\n  producer_config: {compression.type: gzip, linger.ms: '20'}\n"
    assert config_of("", pipeline) == {"compression.type": "gzip", "linger.ms": "20"}
    assert config_of(", compression: zstd", pipeline) == {"compression.type": "zstd", "linger.ms": "20"}
    assert config_of(", compression: none") == {"compression.type": "none"}


def test_an_unknown_codec_is_refused_naming_the_flow() -> None:
    with pytest.raises(TopologyError, match="flows.f.compression"):
        config_of(", compression: brotli")
