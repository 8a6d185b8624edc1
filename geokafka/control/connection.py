"""Client settings for each cluster, built once from the topology.

librdkafka settings for the control plane (confluent-kafka) and ``kafka.``-prefixed settings
for Spark's Kafka source come from the same :class:`ClusterConnection`, so both sides always
agree on addresses and security. Secrets are read from their env var or file here, and only here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geokafka.errors import AuthError, TopologyError
from geokafka.secrets import jaas_quote, read_secret, remember_secret
from geokafka.topology.local_files import local_ca_file
from geokafka.topology.ports import broker_ports
from geokafka.topology.schema import Cluster, Pipeline, Topology

_DEFAULT_STATE_DIR: Path = Pipeline.model_fields["state_dir"].default
LIBRDKAFKA_LOG = logging.getLogger("geokafka.librdkafka")
"""Where librdkafka's log lines go: nowhere (no handler, not propagated)."""
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
LIBRDKAFKA_LOG.propagate = False


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach one cluster."""

    name: str
    bootstrap: str
    security: dict[str, str] = field(repr=False)  # may hold secrets: never in a repr or a log line

    def librdkafka(self, **extra: Any) -> dict[str, Any]:
        """Settings for confluent-kafka clients (``extra`` wins).

        librdkafka's own log lines go to the ``geokafka.librdkafka`` logger, which drops them:
        a client library never prints to the console (a dead cluster would otherwise print a
        ``Connect ... failed`` line per broker per second); geokafka says what happened itself.
        """
        return {"bootstrap.servers": self.bootstrap, "log_level": 3, "logger": LIBRDKAFKA_LOG, **self.security,
                **extra}

    def spark_options(self) -> dict[str, str]:
        """``kafka.*`` options for Spark's Kafka source (Java client names).

        The values can hold secrets (``sasl.jaas.config``, a client key): pass them to the
        reader only and never print them (Spark's plans, progress and UI do not show them).
        """
        return {f"kafka.{k}": v for k, v in self.java_client().items()}

    def java_client(self) -> dict[str, str]:
        """Settings for Java Kafka clients (geokafka's Spark source and sink): bootstrap and security. May hold secrets."""
        return {"bootstrap.servers": self.bootstrap, **_java_security(self.name, self.security)}


def connection(topology: Topology, name: str) -> ClusterConnection:
    """The connection of cluster ``name``."""
    try:
        cluster = topology.clusters[name]
    except KeyError:
        raise TopologyError(f"unknown cluster {name!r} (known: {', '.join(sorted(topology.clusters))})") from None
    return cluster_connection(name, cluster, topology.pipeline.state_dir)


def cluster_connection(name: str, cluster: Cluster, state_dir: Path | None = None) -> ClusterConnection:
    """Build the connection of one cluster; local clusters bootstrap from all their brokers.

    A local cluster with TLS is trusted through the CA geokafka generated for it under
    ``state_dir`` (the topology's ``pipeline.state_dir``).
    """
    bootstrap = cluster.bootstrap
    if cluster.local is not None:
        host = cluster.bootstrap_host
        bootstrap = ",".join(f"{host}:{p}" for p in broker_ports(cluster))
    sec = cluster.security
    settings: dict[str, str] = {"security.protocol": sec.protocol.lower()}
    if sec.sasl_mechanism:
        settings["sasl.mechanism"] = sec.sasl_mechanism
        settings["sasl.username"] = sec.username or ""
        settings["sasl.password"] = read_secret(sec.password, f"clusters.{name}.security.password")
    if sec.ca_file:
        settings["ssl.ca.location"] = str(sec.ca_file)
    elif cluster.local is not None and sec.protocol.endswith("SSL"):
        settings["ssl.ca.location"] = str(local_ca_file(state_dir or _DEFAULT_STATE_DIR, name))
    if sec.cert_file:
        settings["ssl.certificate.location"] = str(sec.cert_file)
    if sec.key_file:
        settings["ssl.key.location"] = str(sec.key_file)
    if sec.key_password:
        settings["ssl.key.password"] = read_secret(sec.key_password, f"clusters.{name}.security.key_password")
    settings.update(cluster.client_config)
    return ClusterConnection(name=name, bootstrap=bootstrap, security=settings)


def _java_security(name: str, settings: dict[str, str]) -> dict[str, str]:
    """Translate librdkafka security settings to the Java client's names."""
    java: dict[str, str] = {"security.protocol": settings["security.protocol"].upper()}
    mechanism = settings.get("sasl.mechanism")
    if mechanism:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        user = jaas_quote(settings["sasl.username"])
        password = jaas_quote(settings["sasl.password"])
        java["sasl.mechanism"] = mechanism
        java["sasl.jaas.config"] = f'{module} required username="{user}" password="{password}";'
    if "ssl.ca.location" in settings:
        java["ssl.truststore.type"] = "PEM"
        java["ssl.truststore.location"] = settings["ssl.ca.location"]
    if "ssl.certificate.location" in settings or "ssl.key.location" in settings:
        # Java takes a PEM key store as text: the chain and the (PKCS#8) key, read here.
        java["ssl.keystore.type"] = "PEM"
        java["ssl.keystore.certificate.chain"] = _read_pem(name, "cert_file", settings.get("ssl.certificate.location"))
        key = _read_pem(name, "key_file", settings.get("ssl.key.location"))
        if "BEGIN PRIVATE KEY" not in key and "BEGIN ENCRYPTED PRIVATE KEY" not in key:
            raise AuthError(
                f"cluster {name}: security.key_file must be a PKCS#8 PEM key (BEGIN PRIVATE KEY) for Spark's "
                "Kafka client; convert it with `openssl pkcs8 -topk8`"
            )
        remember_secret(key)
        java["ssl.keystore.key"] = key
        if "ssl.key.password" in settings:
            java["ssl.key.password"] = settings["ssl.key.password"]
    verify = settings.get("ssl.endpoint.identification.algorithm")
    if verify is not None:
        java["ssl.endpoint.identification.algorithm"] = "" if verify == "none" else verify
    return java


def _read_pem(name: str, key: str, path: str | None) -> str:
    """The text of a PEM file of the security block; errors name the key and path, never the content."""
    if not path:
        raise AuthError(f"cluster {name}: mutual TLS needs both security.cert_file and security.key_file")
    try:
        text = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not a PEM text file"
        raise AuthError(f"cluster {name}: security.{key} {path} cannot be read: {reason}") from None
    if "-----BEGIN " not in text:
        raise AuthError(f"cluster {name}: security.{key} {path} is not PEM")
    return text
