"""TLS material for local clusters, generated on this machine with the ``openssl`` command.

No download and no Python dependency: ``./run`` installs ``openssl`` from Debian when it is
missing (as it does for kcat). One ``keytool`` call per step would take seconds each on a
busy machine; ``openssl`` takes milliseconds. Under a cluster's ``tls`` folder (see
:mod:`geokafka.topology.local_files`):

============== =====================================================================
``ca.key``     the private key of the cluster's own CA (mode 0600)
``ca.pem``     the CA certificate, which clients and brokers trust (``ssl.ca.location``)
``broker.p12`` the brokers' PKCS12 keystore: key and certificate (SAN IP:127.0.0.1,
               DNS:localhost) signed by the CA, with the chain (mode 0600)
``store.pass`` the random password of the keystore (mode 0600)
============== =====================================================================

Generation is idempotent: the set is built in a temporary folder and renamed into place
only when complete, so an interrupted run never leaves half a set, and an existing set is
kept (restarted brokers present the same certificate, clients keep trusting the same CA).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from geokafka.errors import EnvironmentError_
from geokafka.topology.local_files import CA_PEM, TLS_DIR

# Pinned parameters, so every machine generates the same kind of material.
KEY = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
DIGEST = "-sha256"
VALIDITY_DAYS = "3650"
_BROKER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
"""
_FILES = ("ca.key", CA_PEM, "broker.p12", "store.pass")


@dataclass(frozen=True)
class BrokerTls:
    """Paths of a cluster's generated TLS material."""

    folder: Path

    @property
    def ca_pem(self) -> Path:
        """The CA certificate (PEM) clients and brokers trust."""
        return self.folder / CA_PEM

    @property
    def keystore(self) -> Path:
        """The brokers' PKCS12 keystore."""
        return self.folder / "broker.p12"

    @property
    def password_file(self) -> Path:
        """Holds the keystore password (never printed)."""
        return self.folder / "store.pass"

    def password(self) -> str:
        """The keystore password."""
        return self.password_file.read_text(encoding="ascii").strip()


def ensure_broker_tls(home: Path, cluster: str) -> BrokerTls:
    """The TLS material of the local cluster at ``home``, generated on first use."""
    tls = BrokerTls(home / TLS_DIR)
    if _complete(tls.folder):
        return tls
    if shutil.which("openssl") is None:
        raise EnvironmentError_("openssl is not on PATH: cannot create the TLS certificates of local clusters")
    home.mkdir(parents=True, exist_ok=True)
    if tls.folder.exists():  # an incomplete set (say, a foreign file): start over
        shutil.rmtree(tls.folder)
    work = Path(tempfile.mkdtemp(prefix=".tls-", dir=home))
    try:
        _generate(work, cluster)
        try:
            work.rename(tls.folder)
        except OSError:  # another process finished first: keep its set
            if not _complete(tls.folder):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tls


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in _FILES)


def _generate(work: Path, cluster: str) -> None:
    """CA key and certificate; broker key, CSR, CA-signed certificate; PKCS12 keystore with the chain."""
    w = {name: str(work / name) for name in ("ca.key", CA_PEM, "broker.key", "broker.csr", "broker.crt",
                                             "broker.ext", "broker.p12", "store.pass")}
    old_umask = os.umask(0o077)  # keys and passwords are created private
    try:
        Path(w["store.pass"]).write_text(secrets.token_urlsafe(24) + "\n", encoding="ascii")
        Path(w["broker.ext"]).write_text(_BROKER_EXTENSIONS, encoding="ascii")
        _openssl("genpkey", *KEY, "-out", w["ca.key"])
        _openssl("req", "-x509", "-new", "-key", w["ca.key"], DIGEST, "-days", VALIDITY_DAYS,
                 "-subj", f"/O=geokafka/CN=geokafka local CA {cluster}",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 "-out", w[CA_PEM])
        _openssl("genpkey", *KEY, "-out", w["broker.key"])
        _openssl("req", "-new", "-key", w["broker.key"], "-subj", f"/O=geokafka/OU={cluster}/CN=localhost",
                 "-out", w["broker.csr"])
        _openssl("x509", "-req", "-in", w["broker.csr"], "-CA", w[CA_PEM], "-CAkey", w["ca.key"], DIGEST,
                 "-days", VALIDITY_DAYS, "-set_serial", str(secrets.randbits(63)), "-extfile", w["broker.ext"],
                 "-out", w["broker.crt"])
        _openssl("pkcs12", "-export", "-name", "broker", "-in", w["broker.crt"], "-inkey", w["broker.key"],
                 "-certfile", w[CA_PEM], "-passout", f"file:{w['store.pass']}", "-out", w["broker.p12"])
    finally:
        os.umask(old_umask)
    for leftover in ("broker.key", "broker.csr", "broker.crt", "broker.ext"):
        Path(w[leftover]).unlink()
    Path(w[CA_PEM]).chmod(0o644)
    work.chmod(0o755)


def _openssl(*args: str) -> None:
    proc = subprocess.run(
        ["openssl", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
    )
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[:1] or ["?"]
        raise EnvironmentError_(f"openssl {args[0]} failed while creating local TLS certificates: {detail[0]}")
