"""The trainer's Kafka settings: the TS side's variables → librdkafka's config, and librdkafka's
errors → a message saying what failed (docs: infra/kafka/README.md, "Client settings")."""

from __future__ import annotations

from pathlib import Path

import pytest

from spa_trainer.kafka.connection import (
    KafkaSettings,
    Sasl,
    describe_client_error,
    describe_connect_failure,
    librdkafka_config,
    settings_from_env,
)

SCRAM = {"KAFKA_SASL_MECHANISM": "SCRAM-SHA-256", "KAFKA_SASL_USERNAME": "alice", "KAFKA_SASL_PASSWORD": "pw"}


@pytest.fixture()
def pem(tmp_path: Path) -> dict[str, str]:
    """PEM-looking files: only their markers are checked before librdkafka reads them."""
    files = {
        "ca": "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n",
        "cert": "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n",
        "key": "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n",
        "encrypted": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nZQ==\n-----END ENCRYPTED PRIVATE KEY-----\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in files}


def config(env: dict[str, str], brokers: str | None = None) -> dict[str, str]:
    return librdkafka_config(settings_from_env(brokers, env))


def test_no_settings_is_the_local_plaintext_broker() -> None:
    assert config({}) == {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "PLAINTEXT"}
    assert config({"KAFKA_BROKERS": " k1:9092,k2:9092 ", "KAFKA_CLIENT_ID": "trainer"}) == {
        "bootstrap.servers": "k1:9092,k2:9092",
        "security.protocol": "PLAINTEXT",
        "client.id": "trainer",
    }
    assert config({"KAFKA_BROKERS": "k1:9092"}, brokers="flag:9092")["bootstrap.servers"] == "flag:9092"


@pytest.mark.parametrize(
    ("mechanism", "expected"),
    [("plain", "PLAIN"), ("scram-sha-256", "SCRAM-SHA-256"), ("SCRAM-SHA-512", "SCRAM-SHA-512")],
)
def test_sasl_maps_to_librdkafka_mechanisms(mechanism: str, expected: str) -> None:
    assert config({**SCRAM, "KAFKA_SASL_MECHANISM": mechanism}) == {
        "bootstrap.servers": "127.0.0.1:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": expected,
        "sasl.username": "alice",
        "sasl.password": "pw",
    }


def test_tls_files_map_to_their_librdkafka_properties_and_turn_tls_on(pem: dict[str, str]) -> None:
    assert config({"KAFKA_SSL": "TRUE"})["security.protocol"] == "SSL"
    assert config({"KAFKA_SSL": "false"})["security.protocol"] == "PLAINTEXT"
    assert config({"KAFKA_SSL_CA_LOCATION": pem["ca"]}) == {
        "bootstrap.servers": "127.0.0.1:9092",
        "security.protocol": "SSL",
        "ssl.ca.location": pem["ca"],
    }
    full = config(
        {
            **SCRAM,
            "KAFKA_SSL_CA_LOCATION": pem["ca"],
            "KAFKA_SSL_CERTIFICATE_LOCATION": pem["cert"],
            "KAFKA_SSL_KEY_LOCATION": pem["encrypted"],
            "KAFKA_SSL_KEY_PASSWORD": "kp",
        }
    )
    assert full["security.protocol"] == "SASL_SSL"
    assert {k: v for k, v in full.items() if k.startswith("ssl.")} == {
        "ssl.ca.location": pem["ca"],
        "ssl.certificate.location": pem["cert"],
        "ssl.key.location": pem["encrypted"],
        "ssl.key.password": "kp",
    }


def test_the_password_stays_out_of_the_settings_repr() -> None:
    assert "pw" not in repr(settings_from_env(None, SCRAM))


def test_bad_settings_name_the_variable(pem: dict[str, str], tmp_path: Path) -> None:
    cases = {
        'KAFKA_SSL="yes" must be true or false': {"KAFKA_SSL": "yes"},
        'KAFKA_SASL_MECHANISM="GSSAPI" must be scram-sha-256, scram-sha-512 or plain': {
            **SCRAM,
            "KAFKA_SASL_MECHANISM": "GSSAPI",
        },
        "KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is empty": {"KAFKA_SASL_MECHANISM": "plain"},
        "KAFKA_SASL_MECHANISM is set but KAFKA_SASL_PASSWORD is empty": {**SCRAM, "KAFKA_SASL_PASSWORD": ""},
        f"KAFKA_SSL_CA_LOCATION={tmp_path}/nope.pem is not a readable file": {
            "KAFKA_SSL_CA_LOCATION": f"{tmp_path}/nope.pem"
        },
        f"KAFKA_SSL_CA_LOCATION={pem['key']} holds no PEM certificate": {"KAFKA_SSL_CA_LOCATION": pem["key"]},
        "KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together": {
            "KAFKA_SSL_CERTIFICATE_LOCATION": pem["cert"]
        },
        f"KAFKA_SSL_KEY_LOCATION={pem['cert']} holds no PEM private key": {
            "KAFKA_SSL_CERTIFICATE_LOCATION": pem["cert"],
            "KAFKA_SSL_KEY_LOCATION": pem["cert"],
        },
        f"KAFKA_SSL_KEY_LOCATION={pem['encrypted']} is encrypted; set KAFKA_SSL_KEY_PASSWORD": {
            "KAFKA_SSL_CERTIFICATE_LOCATION": pem["cert"],
            "KAFKA_SSL_KEY_LOCATION": pem["encrypted"],
        },
        "KAFKA_SSL_KEY_PASSWORD is set but KAFKA_SSL_KEY_LOCATION is not": {"KAFKA_SSL_KEY_PASSWORD": "kp"},
        "KAFKA_SSL=false contradicts KAFKA_SSL_CA_LOCATION": {"KAFKA_SSL": "false", "KAFKA_SSL_CA_LOCATION": pem["ca"]},
    }
    for message, env in cases.items():
        with pytest.raises(ValueError) as caught:
            settings_from_env(None, env)
        assert str(caught.value).startswith(message), (env, str(caught.value))


SCRAM_SETTINGS = KafkaSettings(brokers="127.0.0.1:19722", sasl=Sasl("SCRAM-SHA-256", "alice", "pw"))
DOWN = ("_ALL_BROKERS_DOWN", "1/1 brokers are down")
FIXED = "2.6.1"  # librdkafka's first SCRAM that Kafka 4 accepts: no hint about it


def test_refused_credentials_say_so_not_cannot_reach() -> None:
    errors = [
        (
            "_AUTHENTICATION",
            (
                "sasl_plaintext://127.0.0.1:19722/bootstrap: SASL authentication error: Authentication failed during "
                "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256 (after 310ms in state AUTH_REQ)"
            ),
        ),
        DOWN,
    ]
    assert str(describe_connect_failure(SCRAM_SETTINGS, errors, "Local: Broker transport failure", FIXED)) == (
        'Kafka refused the credentials of SASL user "alice" (SCRAM-SHA-256) on 127.0.0.1:19722: '
        "wrong username or password"
    )
    unsupported = [
        (
            "_AUTHENTICATION",
            (
                "sasl_plaintext://127.0.0.1:19722/bootstrap: SASL PLAIN mechanism handshake failed: Broker: Unsupported "
                "SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512,SCRAM-SHA-256 (after 300ms in state AUTH_HANDSHAKE)"
            ),
        )
    ]
    assert str(describe_connect_failure(SCRAM_SETTINGS, unsupported, "x", FIXED)).startswith(
        "Kafka at 127.0.0.1:19722 does not offer SASL mechanism SCRAM-SHA-256 (SASL PLAIN mechanism handshake failed"
    )


def test_refused_scram_on_an_old_librdkafka_names_its_kafka_4_bug() -> None:
    refused = [("_AUTHENTICATION", "sasl_plaintext://127.0.0.1:19722/bootstrap: SASL authentication error: x")]
    assert str(describe_connect_failure(SCRAM_SETTINGS, refused, "x", "2.0.2")) == (
        'Kafka refused the credentials of SASL user "alice" (SCRAM-SHA-256) on 127.0.0.1:19722: '
        "wrong username or password — or, if the broker runs Kafka 4.x, librdkafka 2.0.2 here predates the "
        "SCRAM fix of 2.6.1 (confluentinc/librdkafka#4895): use SASL/PLAIN over TLS, TLS client certificates, "
        "or a newer librdkafka"
    )
    for version in ("2.6.1", "2.10.0", "3.0.0-RC1"):
        assert "#4895" not in str(describe_connect_failure(SCRAM_SETTINGS, refused, "x", version)), version
    plain = KafkaSettings(brokers="127.0.0.1:19722", sasl=Sasl("PLAIN", "alice", "pw"))
    assert str(describe_connect_failure(plain, refused, "x", "2.0.2")).endswith(": wrong username or password")


def test_a_tls_failure_names_the_ca_setting() -> None:
    verify = (
        "_SSL",
        (
            "ssl://127.0.0.1:19723/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
            "failed: broker certificate could not be verified (after 6ms in state SSL_HANDSHAKE)"
        ),
    )
    no_ca = KafkaSettings(brokers="127.0.0.1:19723", ssl=True)
    assert str(describe_connect_failure(no_ca, [verify, DOWN], "x", FIXED)).startswith(
        "the TLS certificate of Kafka at 127.0.0.1:19723 could not be verified against a CA this machine trusts; "
        "set KAFKA_SSL_CA_LOCATION to the PEM file of the CA that signed it (SSL handshake failed: error:0A000086"
    )
    other_ca = KafkaSettings(brokers="127.0.0.1:19723", ssl=True, ssl_files={"ssl.ca.location": "/etc/other-ca.pem"})
    assert "against the CA in KAFKA_SSL_CA_LOCATION=/etc/other-ca.pem (" in str(
        describe_connect_failure(other_ca, [verify], "x", FIXED)
    )
    eof = ("_SSL", "ssl://127.0.0.1:19720/bootstrap: SSL handshake failed: error:0A000126:SSL routines::unexpected eof")
    assert "is it a TLS listener?" in str(describe_connect_failure(no_ca, [eof], "x", FIXED))


def test_unreachable_keeps_the_start_a_broker_hint() -> None:
    refused = ("_TRANSPORT", "127.0.0.1:19729/bootstrap: Connect to ipv4#127.0.0.1:19729 failed: Connection refused")
    message = str(describe_connect_failure(KafkaSettings(brokers="127.0.0.1:19729"), [DOWN, refused], "x", FIXED))
    assert message.startswith("cannot reach Kafka at 127.0.0.1:19729 (Connect to ipv4#127.0.0.1:19729 failed")
    assert "npm run kafka:start" in message
    assert "Local: Timed out" in str(describe_connect_failure(KafkaSettings(), [], "Local: Timed out", FIXED))
    cut = (
        "_TRANSPORT",
        "127.0.0.1:19722/bootstrap: Disconnected: verify that security.protocol is correctly configured",
    )
    assert "does that listener want SASL or TLS?" in str(describe_connect_failure(KafkaSettings(), [cut], "x", FIXED))


def test_a_tls_file_librdkafka_cannot_use_names_its_variable() -> None:
    settings = KafkaSettings(ssl=True, ssl_files={"ssl.key.location": "/k.pem", "ssl.key.password": "x"})
    failure = "Failed to create consumer: ssl.key.location failed: error:0A080009:SSL routines::PEM lib"
    assert str(describe_client_error(settings, failure)) == (
        "KAFKA_SSL_KEY_LOCATION=/k.pem: librdkafka cannot use it (error:0A080009:SSL routines::PEM lib); "
        "wrong KAFKA_SSL_KEY_PASSWORD?"
    )
    mismatch = "Failed to create producer: ssl.key.location failed: error:05800074:x509 certificate routines::key values mismatch"
    assert str(describe_client_error(settings, mismatch)).endswith(
        "; the key is not the one of KAFKA_SSL_CERTIFICATE_LOCATION"
    )


def test_a_client_reports_through_the_error_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """librdkafka's error callback reaches `check_topic`: a closed port is 'cannot reach', quickly."""
    pytest.importorskip("confluent_kafka")
    from spa_trainer.kafka.client import KafkaLog

    for name in ("KAFKA_SASL_MECHANISM", "KAFKA_SSL", "KAFKA_SSL_CA_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConnectionError, match=r"cannot reach Kafka at 127\.0\.0\.1:1 \(Connect to ipv4#127\.0\.0\.1:1"):
        KafkaLog("t", "127.0.0.1:1", group_id="g", connect_timeout_s=1.5)
