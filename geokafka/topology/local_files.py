"""Where a local cluster keeps its files, derived in one place from the state dir and its name.

Both sides need these paths: ``geokafka up`` writes them (data, logs, the generated CA) and
every client of a local TLS cluster trusts the CA file found here.
"""

from __future__ import annotations

from pathlib import Path

TLS_DIR = "tls"
CA_PEM = "ca.pem"


def cluster_home(state_dir: Path, name: str) -> Path:
    """Folder of local cluster ``name``: one sub-folder per node, its TLS material, its id."""
    return (Path(state_dir) / "clusters" / name).absolute()


def local_ca_file(state_dir: Path, name: str) -> Path:
    """The PEM certificate of the CA geokafka generated for local cluster ``name`` (clients trust it)."""
    return cluster_home(state_dir, name) / TLS_DIR / CA_PEM
