"""Local clusters with TLS/SASL listeners: schema rules, broker settings, SCRAM users, client settings."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from geokafka.control.connection import connection
from geokafka.errors import AuthError, TopologyError
from geokafka.infra.broker_security import SCRAM_ITERATIONS, BrokerAuth, broker_auth
from geokafka.infra.certs import BrokerTls, ensure_broker_tls
from geokafka.infra.clusters import local_cluster_spec
from geokafka.infra.local_cluster import properties_escape, server_properties
from geokafka.topology import Topology, load_topology, parse_topology

PASSWORD = 'pa"ss\\wo,rd]=ü'  # JAAS, properties and SCRAM-argument special characters

TOPOLOGY = """
clusters:
  scram:
    bootstrap: 127.0.0.1:26092
    local: {brokers: 2}
    security: {protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, username: gk, password: {env: GK_UNIT_PW}}
  plain:
    bootstrap: 127.0.0.1:27092
    local: {brokers: 1}
    security: {protocol: SASL_PLAINTEXT, sasl_mechanism: PLAIN, username: gk.plain, password: {env: GK_UNIT_PW}}
  tls:
    bootstrap: 127.0.0.1:28092
    local: {brokers: 1}
    security: {protocol: SSL}
  open:
    bootstrap: 127.0.0.1:29092
    local: {brokers: 1}
pipeline:
  state_dir: STATE
"""


@pytest.fixture
def topology(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Topology:
    monkeypatch.setenv("GK_UNIT_PW", PASSWORD)
    return parse_topology(TOPOLOGY.replace("STATE", str(tmp_path / "state")), "test.yaml")


def _auth(topology: Topology, name: str, tls: BrokerTls | None = None) -> BrokerAuth:
    spec = local_cluster_spec(name, topology.clusters[name], topology.pipeline.state_dir)
    return BrokerAuth(spec.security, PASSWORD if spec.security.sasl else None, tls)


@pytest.mark.parametrize(("security", "says"), [
    ("{protocol: SSL, ca_file: /etc/ca.pem}", "security.ca_file cannot be set on a local cluster"),
    ("{protocol: SSL, cert_file: /c.pem, key_file: /k.pem}", "security.cert_file cannot be set on a local cluster"),
    ("{protocol: SASL_SSL, sasl_mechanism: PLAIN, username: 'a b', password: {env: X}}",
     "security.username 'a b': a local cluster's SASL user may only use"),
])
def test_local_clusters_reject_what_geokafka_cannot_set_up(tmp_path: Path, security: str, says: str) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(f"clusters:\n  a:\n    bootstrap: 127.0.0.1:26092\n    local: {{brokers: 1}}\n"
                    f"    security: {security}\n", encoding="utf-8")
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    assert str(caught.value).startswith(f"{path}:2: clusters.a: ")
    assert says in str(caught.value)


def test_a_remote_cluster_keeps_its_ca_file() -> None:
    topology = parse_topology("clusters:\n  r:\n    bootstrap: h:9093\n    security: {protocol: SSL, ca_file: /ca.pem}\n")
    assert str(topology.clusters["r"].security.ca_file) == "/ca.pem"


def test_sasl_ssl_scram_broker_settings(topology: Topology, tmp_path: Path) -> None:
    spec = local_cluster_spec("scram", topology.clusters["scram"], topology.pipeline.state_dir)
    tls = BrokerTls(tmp_path / "tls")
    (tmp_path / "tls").mkdir()
    tls.password_file.write_text("store-pass\n", encoding="ascii")
    props = server_properties(spec, spec.node(2), BrokerAuth(spec.security, PASSWORD, tls))
    assert props["listeners"] == "SASL_SSL://127.0.0.1:26093,CONTROLLER://127.0.0.1:26193"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:26093"
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["sasl.enabled.mechanisms"] == props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="gk" password="pa\\"ss\\\\wo,rd]=ü";'
    )
    assert (props["ssl.keystore.type"], props["ssl.keystore.location"]) == ("PKCS12", str(tls.keystore))
    assert props["ssl.keystore.password"] == props["ssl.key.password"] == "store-pass"
    assert (props["ssl.truststore.type"], props["ssl.truststore.location"]) == ("PEM", str(tls.ca_pem))
    assert props["ssl.client.auth"] == "none"


def test_plain_users_are_listed_in_the_jaas_config(topology: Topology) -> None:
    spec = local_cluster_spec("plain", topology.clusters["plain"], topology.pipeline.state_dir)
    props = server_properties(spec, spec.node(1), _auth(topology, "plain"))
    jaas = props["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.startswith('org.apache.kafka.common.security.plain.PlainLoginModule required username="gk.plain" ')
    assert jaas.endswith(' user_gk.plain="pa\\"ss\\\\wo,rd]=ü";')
    assert not any(key.startswith("ssl.") for key in props)
    assert _auth(topology, "plain").format_args() == []  # PLAIN users need no SCRAM record


def test_plaintext_clusters_are_unchanged(topology: Topology) -> None:
    spec = local_cluster_spec("open", topology.clusters["open"], topology.pipeline.state_dir)
    props = server_properties(spec, spec.node(1), _auth(topology, "open"))
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29192"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert not any(key.startswith(("ssl.", "sasl.", "listener.name.")) for key in props)
    assert server_properties(spec, spec.node(1)) == props


def test_scram_users_are_formatted_with_a_salted_password_only(topology: Topology) -> None:
    args = _auth(topology, "scram").format_args()
    assert args[0] == "--add-scram" and len(args) == 2
    assert PASSWORD not in args[1]
    mechanism, _, rest = args[1].partition("=[")
    fields = dict(part.split("=", 1) for part in rest.rstrip("]").split(","))
    assert mechanism == "SCRAM-SHA-512"
    assert (fields["name"], fields["iterations"]) == ("gk", str(SCRAM_ITERATIONS))
    salt = base64.b64decode(fields["salt"])
    expected = hashlib.pbkdf2_hmac("sha512", PASSWORD.encode(), salt, SCRAM_ITERATIONS)  # RFC 5802 Hi()
    assert base64.b64decode(fields["saltedpassword"]) == expected


def test_the_broker_probe_passes_the_listener(topology: Topology) -> None:
    settings = _auth(topology, "plain").client_settings()
    assert settings == {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
                        "sasl.username": "gk.plain", "sasl.password": PASSWORD}
    assert repr(PASSWORD) not in repr(_auth(topology, "plain"))


def test_brokers_need_the_password_to_start(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GK_UNIT_PW")
    spec = local_cluster_spec("plain", topology.clusters["plain"], topology.pipeline.state_dir)
    with pytest.raises(AuthError, match="^clusters.plain.security.password: environment variable GK_UNIT_PW is not set$"):
        broker_auth(spec.security, spec.home, spec.name)


def test_clients_of_a_local_tls_cluster_trust_its_generated_ca(topology: Topology, tmp_path: Path) -> None:
    ca = tmp_path / "state" / "clusters" / "scram" / "tls" / "ca.pem"
    conn = connection(topology, "scram")
    assert conn.librdkafka()["ssl.ca.location"] == str(ca)
    assert conn.spark_options()["kafka.ssl.truststore.location"] == str(ca)
    assert conn.spark_options()["kafka.ssl.truststore.type"] == "PEM"
    assert "ssl.ca.location" not in connection(topology, "plain").librdkafka()  # no TLS, no CA


@pytest.mark.parametrize(("value", "escaped"), [
    ("/plain/path-1.2", "/plain/path-1.2"),
    ('a\\b "c"', 'a\\\\b "c"'),
    (" lead", "\\ lead"),
    ("line\nbreak\ttab", "line\\nbreak\\ttab"),
    ("ü€", "\\u00fc\\u20ac"),
    ("😀", "\\ud83d\\ude00"),
])
def test_properties_values_are_escaped(value: str, escaped: str) -> None:
    assert properties_escape(value) == escaped


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_certificates_are_generated_once_and_kept(tmp_path: Path) -> None:
    tls = ensure_broker_tls(tmp_path, "east")
    assert sorted(p.name for p in tls.folder.iterdir()) == ["broker.p12", "ca.key", "ca.pem", "store.pass"]
    for private in ("broker.p12", "ca.key", "store.pass"):
        assert (tls.folder / private).stat().st_mode & 0o077 == 0, private
    before = {p.name: p.read_bytes() for p in tls.folder.iterdir()}
    assert ensure_broker_tls(tmp_path, "east") == tls
    assert {p.name: p.read_bytes() for p in tls.folder.iterdir()} == before  # idempotent
    leaf = subprocess.run(
        ["openssl", "pkcs12", "-in", str(tls.keystore), "-passin", f"file:{tls.password_file}", "-nokeys",
         "-clcerts"], capture_output=True, text=True, check=True).stdout
    text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=leaf, capture_output=True, text=True,
                          check=True).stdout
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(tls.ca_pem)], input=leaf, capture_output=True,
                            text=True, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert not list(tmp_path.glob(".tls-*"))  # no leftovers
