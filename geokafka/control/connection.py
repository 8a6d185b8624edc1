"""Client settings for each cluster, built once from the topology.

librdkafka settings for the control plane (confluent-kafka) and ``kafka.``-prefixed settings
for Spark's Kafka source come from the same :class:`ClusterConnection`, so both sides always
agree on addresses and security. Secrets are read from their env var or file here, and only here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from geokafka.errors import AuthError, TopologyError
from geokafka.topology.ports import broker_ports
from geokafka.topology.schema import Cluster, SecretRef, Topology


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach one cluster."""

    name: str
    bootstrap: str
    security: dict[str, str] = field(repr=False)  # may hold secrets: never in a repr or a log line

    def librdkafka(self, **extra: object) -> dict[str, object]:
        """Settings for confluent-kafka clients (``extra`` wins); plain values, safe to pickle.

        librdkafka's own log lines go to the ``geokafka.kafka`` logger in this process
        (``logger`` cannot cross to Spark executors, so writers there log errors only).
        """
        return {"bootstrap.servers": self.bootstrap, "log_level": 3, **self.security, **extra}

    def spark_options(self) -> dict[str, str]:
        """``kafka.*`` options for Spark's Kafka source (Java client names)."""
        opts = {"kafka.bootstrap.servers": self.bootstrap}
        java = _java_security(self.security)
        opts.update({f"kafka.{k}": v for k, v in java.items()})
        return opts


def connection(topology: Topology, name: str) -> ClusterConnection:
    """The connection of cluster ``name``."""
    try:
        cluster = topology.clusters[name]
    except KeyError:
        raise TopologyError(f"unknown cluster {name!r} (known: {', '.join(sorted(topology.clusters))})") from None
    return cluster_connection(name, cluster)


def cluster_connection(name: str, cluster: Cluster) -> ClusterConnection:
    """Build the connection of one cluster; local clusters bootstrap from all their brokers."""
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
    if sec.cert_file:
        settings["ssl.certificate.location"] = str(sec.cert_file)
    if sec.key_file:
        settings["ssl.key.location"] = str(sec.key_file)
    if sec.key_password:
        settings["ssl.key.password"] = read_secret(sec.key_password, f"clusters.{name}.security.key_password")
    settings.update(cluster.client_config)
    return ClusterConnection(name=name, bootstrap=bootstrap, security=settings)


def read_secret(ref: SecretRef | None, where: str) -> str:
    """The secret value behind ``ref``; errors name the reference, never the value."""
    if ref is None:
        raise AuthError(f"{where}: no secret configured")
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise AuthError(f"{where}: environment variable {ref.env} is not set")
        return value
    assert ref.file is not None
    try:
        return ref.file.read_text(encoding="utf-8").rstrip("\n")
    except OSError as exc:
        raise AuthError(f"{where}: cannot read secret file {ref.file}: {exc.strerror}") from None


def _java_security(settings: dict[str, str]) -> dict[str, str]:
    """Translate librdkafka security settings to the Java client's names."""
    java: dict[str, str] = {"security.protocol": settings["security.protocol"].upper()}
    mechanism = settings.get("sasl.mechanism")
    if mechanism:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        user = _jaas_quote(settings["sasl.username"])
        password = _jaas_quote(settings["sasl.password"])
        java["sasl.mechanism"] = mechanism
        java["sasl.jaas.config"] = f'{module} required username="{user}" password="{password}";'
    if "ssl.ca.location" in settings:
        java["ssl.truststore.type"] = "PEM"
        java["ssl.truststore.location"] = settings["ssl.ca.location"]
    return java


def _jaas_quote(value: str) -> str:
    """Escape a value for a double-quoted JAAS option (the parser unescapes backslashes too)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
