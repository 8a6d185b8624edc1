"""Client settings built from the topology: librdkafka for the control plane, ``kafka.*`` for Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from geokafka.control.connection import cluster_connection, connection
from geokafka.errors import AuthError, TopologyError
from geokafka.secrets import read_secret
from geokafka.topology import Topology, parse_topology
from geokafka.topology.schema import SecretRef

SECRET = "s3cr3t-Value"  # never to appear in an error or a repr

TOPOLOGY = """
clusters:
  local3:
    bootstrap: 127.0.0.1:19092
    local: {brokers: 3}
  plain:
    bootstrap: "k1.example.com:9092,k2.example.com:9092"
    client_config: {client.id: geokafka, socket.keepalive.enable: "true"}
  scram-env:
    bootstrap: kafka.example.com:9093
    security:
      protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-512
      username: geokafka
      password: {env: GK_TEST_KAFKA_PASSWORD}
      ca_file: /etc/ssl/kafka-ca.pem
  scram-file:
    bootstrap: kafka.example.com:9093
    security:
      protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-256
      username: geokafka
      password: {file: SECRET_FILE}
  plain-sasl:
    bootstrap: kafka.example.com:9094
    security: {protocol: SASL_PLAINTEXT, sasl_mechanism: PLAIN, username: u, password: {env: GK_TEST_KAFKA_PASSWORD}}
  mtls:
    bootstrap: kafka.example.com:9095
    security:
      protocol: SSL
      ca_file: /etc/ssl/ca.pem
      cert_file: /etc/ssl/client.pem
      key_file: /etc/ssl/client.key
      key_password: {env: GK_TEST_KEY_PASSWORD}
"""


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "kafka-password"
    path.write_text(SECRET + "\n", encoding="utf-8")
    return path


@pytest.fixture
def topology(secret_file: Path) -> Topology:
    return parse_topology(TOPOLOGY.replace("SECRET_FILE", str(secret_file)), "test.yaml")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GK_TEST_KAFKA_PASSWORD", raising=False)
    monkeypatch.delenv("GK_TEST_KEY_PASSWORD", raising=False)


def test_plaintext(topology: Topology) -> None:
    conn = connection(topology, "plain")
    settings = conn.librdkafka()
    assert settings["bootstrap.servers"] == "k1.example.com:9092,k2.example.com:9092"
    assert settings["security.protocol"] == "plaintext"
    assert settings["client.id"] == "geokafka"  # client_config passes through
    assert not any(key.startswith(("sasl.", "ssl.")) for key in settings)
    assert conn.spark_options() == {
        "kafka.bootstrap.servers": "k1.example.com:9092,k2.example.com:9092",
        "kafka.security.protocol": "PLAINTEXT",
    }


def test_extra_librdkafka_settings_win(topology: Topology) -> None:
    settings = connection(topology, "plain").librdkafka(**{"client.id": "mine", "group.id": "g"})
    assert settings["client.id"] == "mine"
    assert settings["group.id"] == "g"


def test_a_local_cluster_bootstraps_from_every_broker(topology: Topology) -> None:
    conn = connection(topology, "local3")
    assert conn.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert conn.spark_options()["kafka.bootstrap.servers"] == conn.bootstrap


def test_sasl_ssl_scram_with_the_password_from_env(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", SECRET)
    conn = connection(topology, "scram-env")
    settings = conn.librdkafka()
    assert {k: settings[k] for k in settings if k.startswith(("security", "sasl", "ssl"))} == {
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "geokafka",
        "sasl.password": SECRET,
        "ssl.ca.location": "/etc/ssl/kafka-ca.pem",
    }
    assert conn.spark_options() == {
        "kafka.bootstrap.servers": "kafka.example.com:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="geokafka" password="{SECRET}";'
        ),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/ssl/kafka-ca.pem",
    }


def test_sasl_ssl_scram_with_the_password_from_a_file(topology: Topology) -> None:
    conn = connection(topology, "scram-file")
    assert conn.librdkafka()["sasl.password"] == SECRET  # trailing newline stripped
    assert conn.librdkafka()["sasl.mechanism"] == "SCRAM-SHA-256"
    jaas = conn.spark_options()["kafka.sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.scram.ScramLoginModule required ")
    assert f'password="{SECRET}";' in jaas
    assert "kafka.ssl.truststore.location" not in conn.spark_options()  # no ca_file: the JVM's trust store


def test_sasl_plain_uses_the_plain_login_module(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", SECRET)
    options = connection(topology, "plain-sasl").spark_options()
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    plain_module = "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert options["kafka.sasl.jaas.config"].startswith(f"{plain_module} required ")


@pytest.mark.parametrize(("password", "in_jaas"), [
    ('pa"ss', 'password="pa\\"ss";'),
    ("C:\\keys\\k", 'password="C:\\\\keys\\\\k";'),  # JAAS unescapes backslashes: they are doubled
    ("ends-with\\", 'password="ends-with\\\\";'),  # else the closing quote would be escaped
])
def test_jaas_values_are_escaped(
    topology: Topology, monkeypatch: pytest.MonkeyPatch, password: str, in_jaas: str
) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", password)
    conn = connection(topology, "scram-env")
    assert conn.librdkafka()["sasl.password"] == password  # librdkafka takes it as it is
    assert conn.spark_options()["kafka.sasl.jaas.config"].endswith(in_jaas)


def test_mutual_tls_settings(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KEY_PASSWORD", SECRET)
    settings = connection(topology, "mtls").librdkafka()
    assert settings["security.protocol"] == "ssl"
    assert settings["ssl.ca.location"] == "/etc/ssl/ca.pem"
    assert settings["ssl.certificate.location"] == "/etc/ssl/client.pem"
    assert settings["ssl.key.location"] == "/etc/ssl/client.key"
    assert settings["ssl.key.password"] == SECRET


def test_missing_env_var_is_an_auth_error_naming_the_key(topology: Topology) -> None:
    with pytest.raises(AuthError) as caught:
        connection(topology, "scram-env")
    message = str(caught.value)
    assert message == "clusters.scram-env.security.password: environment variable GK_TEST_KAFKA_PASSWORD is not set"
    assert caught.value.exit_code == 9


def test_missing_key_password_names_its_key_and_never_the_other_secret(
    topology: Topology, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", SECRET)
    with pytest.raises(AuthError) as caught:
        connection(topology, "mtls")
    assert "clusters.mtls.security.key_password" in str(caught.value)
    assert "GK_TEST_KEY_PASSWORD" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_unreadable_secret_file_names_the_file_not_the_value(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-secret"
    with pytest.raises(AuthError, match=r"^where: cannot read secret file .*no-such-secret: No such file"):
        read_secret(SecretRef(file=missing), "where")


def test_no_secret_configured() -> None:
    with pytest.raises(AuthError, match="^clusters.x.security.password: no secret configured$"):
        read_secret(None, "clusters.x.security.password")


def test_secrets_never_appear_in_the_repr(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", SECRET)
    conn = connection(topology, "scram-env")
    assert SECRET not in repr(conn)
    assert SECRET not in str(conn)
    assert "kafka.example.com:9093" in repr(conn)


def test_unknown_cluster(topology: Topology) -> None:
    known = "local3, mtls, plain, plain-sasl, scram-env, scram-file"
    with pytest.raises(TopologyError, match=rf"^unknown cluster 'nope' \(known: {known}\)$"):
        connection(topology, "nope")


def test_cluster_connection_is_the_same_as_connection(topology: Topology) -> None:
    assert cluster_connection("plain", topology.clusters["plain"]) == connection(topology, "plain")


def _mtls(tmp_path: Path, key_text: str, key_password: bool = False) -> Topology:
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", encoding="ascii")
    key.write_text(key_text, encoding="ascii")
    extra = "\n      key_password: {env: GK_TEST_KEY_PASSWORD}" if key_password else ""
    return parse_topology(f"""
clusters:
  mtls:
    bootstrap: kafka.example.com:9095
    security:
      protocol: SSL
      ca_file: /etc/ssl/ca.pem
      cert_file: {cert}
      key_file: {key}{extra}
""")


def test_mutual_tls_reaches_spark_as_a_pem_key_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KEY_PASSWORD", SECRET)
    key = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----\n"
    options = connection(_mtls(tmp_path, key, key_password=True), "mtls").spark_options()
    assert options["kafka.security.protocol"] == "SSL"
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.keystore.certificate.chain"].startswith("-----BEGIN CERTIFICATE-----")
    assert options["kafka.ssl.keystore.key"] == key
    assert options["kafka.ssl.key.password"] == SECRET
    assert options["kafka.ssl.truststore.location"] == "/etc/ssl/ca.pem"


def test_mutual_tls_key_problems_are_auth_errors_naming_the_key(tmp_path: Path) -> None:
    pkcs1 = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n"
    with pytest.raises(AuthError, match=r"^cluster mtls: security.key_file must be a PKCS#8 PEM key"):
        connection(_mtls(tmp_path, pkcs1), "mtls").spark_options()
    gone = _mtls(tmp_path, "x")
    (tmp_path / "client.key").unlink()
    with pytest.raises(AuthError, match=r"^cluster mtls: security.key_file .*client.key cannot be read: No such file"):
        connection(gone, "mtls").spark_options()


def test_disabled_hostname_verification_reaches_spark(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_KAFKA_PASSWORD", SECRET)
    cluster = topology.clusters["scram-env"].model_copy(
        update={"client_config": {"ssl.endpoint.identification.algorithm": "none"}})
    options = cluster_connection("scram-env", cluster).spark_options()
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""
