"""The client listener of a local cluster's brokers: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.

A local cluster's brokers listen the way its ``security`` block says clients connect, on the
bootstrap ports; there is no other client port. Brokers replicate over that same listener,
authenticating as the configured user; only the KRaft controller listener (a port of its
own) stays PLAINTEXT. TLS uses the CA and keystore of :mod:`geokafka.infra.certs`. SASL
users: PLAIN users are listed in the listener's JAAS config; SCRAM users are written into the
cluster metadata when the storage is formatted (``--add-scram``, with the salted password
only, so the password is never on a command line).

Secrets are resolved by :func:`broker_auth` only when brokers are started, and live in
memory and in the nodes' ``server.properties`` (mode 0600) only.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from geokafka.infra.certs import BrokerTls, ensure_broker_tls
from geokafka.secrets import jaas_quote, read_secret
from geokafka.topology.schema import SecretRef

SCRAM_ITERATIONS = 8192
_SCRAM_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_LOGIN_MODULE = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@dataclass(frozen=True)
class ListenerSecurity:
    """How the brokers' client listener authenticates (from the cluster's ``security`` block)."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: SecretRef | None = None  # a reference: read only when the brokers start

    @property
    def tls(self) -> bool:
        """True for SSL and SASL_SSL."""
        return self.protocol.endswith("SSL")

    @property
    def sasl(self) -> bool:
        """True for SASL_PLAINTEXT and SASL_SSL."""
        return self.protocol.startswith("SASL")

    @property
    def listener_name(self) -> str:
        """The name of the client listener (the protocol's name)."""
        return self.protocol


@dataclass(frozen=True)
class BrokerAuth:
    """A listener's security with its secrets resolved and its TLS material in place."""

    listener: ListenerSecurity
    password: str | None = field(default=None, repr=False)
    tls: BrokerTls | None = None

    def server_properties(self) -> dict[str, str]:
        """Broker settings of the client listener's TLS and SASL (empty for PLAINTEXT)."""
        props: dict[str, str] = {}
        prefix = f"listener.name.{self.listener.listener_name.lower()}."
        if self.tls is not None:
            props.update({
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(self.tls.keystore),
                "ssl.keystore.password": self.tls.password(),
                "ssl.key.password": self.tls.password(),
                "ssl.truststore.type": "PEM",  # brokers connect to each other over this listener too
                "ssl.truststore.location": str(self.tls.ca_pem),
                "ssl.client.auth": "none",
            })
        mechanism = self.listener.mechanism
        if self.listener.sasl and mechanism is not None:
            user, password = self.listener.username or "", self.password or ""
            jaas = f'{_LOGIN_MODULE[mechanism]} required username="{jaas_quote(user)}" password="{jaas_quote(password)}"'
            if mechanism == "PLAIN":
                jaas += f' user_{user}="{jaas_quote(password)}"'
            props.update({
                "sasl.enabled.mechanisms": mechanism,
                "sasl.mechanism.inter.broker.protocol": mechanism,
                f"{prefix}{mechanism.lower()}.sasl.jaas.config": jaas + ";",
            })
        return props

    def format_args(self) -> list[str]:
        """Extra ``kafka-storage format`` arguments: the SCRAM user, as a salted password."""
        mechanism = self.listener.mechanism
        if not self.listener.sasl or mechanism not in _SCRAM_HASH:
            return []
        salt = secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(_SCRAM_HASH[mechanism], (self.password or "").encode(), salt, SCRAM_ITERATIONS)
        b64 = base64.b64encode
        return ["--add-scram", f"{mechanism}=[name={self.listener.username},iterations={SCRAM_ITERATIONS},"
                               f"salt={b64(salt).decode()},saltedpassword={b64(salted).decode()}]"]

    def client_settings(self) -> dict[str, str]:
        """librdkafka security settings that pass this listener (for the readiness probe)."""
        settings = {"security.protocol": self.listener.protocol.lower()}
        if self.tls is not None:
            settings["ssl.ca.location"] = str(self.tls.ca_pem)
        if self.listener.sasl and self.listener.mechanism is not None:
            settings.update({"sasl.mechanism": self.listener.mechanism, "sasl.username": self.listener.username or "",
                             "sasl.password": self.password or ""})
        return settings


def broker_auth(listener: ListenerSecurity, home: Path, cluster: str) -> BrokerAuth:
    """Resolve the listener's password and create its TLS material if needed."""
    password = None
    if listener.sasl:
        password = read_secret(listener.password, f"clusters.{cluster}.security.password")
    tls = ensure_broker_tls(home, cluster) if listener.tls else None
    return BrokerAuth(listener, password, tls)
