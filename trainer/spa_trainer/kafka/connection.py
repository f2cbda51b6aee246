"""The trainer's Kafka connection settings: the environment variables the TS side reads
(infra/kafka/client/config.ts), mapped to librdkafka's configuration, and librdkafka's errors told
apart, so that refused credentials or a failed TLS handshake say so instead of "cannot reach Kafka".
The variables and their librdkafka properties are listed in infra/kafka/client/README.md ("Client
settings"); the TLS ones are named after librdkafka's (`KAFKA_SSL_CA_LOCATION` is `ssl.ca.location`).

Pure (no confluent_kafka import): `kafka_source.py` builds the clients and feeds librdkafka's
error callback into `describe_connect_failure`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LOCAL_BROKERS = "127.0.0.1:9092"
MECHANISMS = {"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
# The TLS files, by librdkafka property; each variable is the property's name in capitals.
SSL_PROPERTIES = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password")


def env_name(prop: str) -> str:
    """The variable of a librdkafka property: `ssl.ca.location` → `KAFKA_SSL_CA_LOCATION`."""
    return "KAFKA_" + prop.upper().replace(".", "_")


@dataclass(frozen=True)
class Sasl:
    mechanism: str  # librdkafka's spelling: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class KafkaSettings:
    """Where the cluster is and how to log in; `ssl_files` maps librdkafka's ssl.* properties to values."""

    brokers: str = LOCAL_BROKERS
    client_id: str | None = None
    sasl: Sasl | None = None
    ssl: bool = False
    ssl_files: Mapping[str, str] = field(default_factory=dict, repr=False)


def _sasl(env: Mapping[str, str]) -> Sasl | None:
    mechanism = env.get("KAFKA_SASL_MECHANISM", "").strip()
    if not mechanism:
        return None
    if mechanism.lower() not in MECHANISMS:
        raise ValueError(f'KAFKA_SASL_MECHANISM="{mechanism}" must be scram-sha-256, scram-sha-512 or plain')
    username, password = env.get("KAFKA_SASL_USERNAME", ""), env.get("KAFKA_SASL_PASSWORD", "")
    if not username:
        raise ValueError("KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is empty")
    if not password:
        raise ValueError("KAFKA_SASL_MECHANISM is set but KAFKA_SASL_PASSWORD is empty")
    return Sasl(MECHANISMS[mechanism.lower()], username, password)


def _readable_pem(prop: str, path: str) -> str:
    try:
        if not Path(path).is_file():
            raise OSError("not a file")
        return Path(path).read_text("latin-1")
    except OSError as err:
        raise ValueError(f"{env_name(prop)}={path} is not a readable file ({err.strerror or err})") from err


def _check_ssl_files(files: Mapping[str, str]) -> None:
    """Each file exists and holds what it should, certificate and key come together, an encrypted
    key has its password: checked before any connection, naming the variable (as the TS side does)."""
    cert, key = files.get("ssl.certificate.location"), files.get("ssl.key.location")
    if (cert is None) != (key is None):
        raise ValueError("KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together: set both or neither")
    if "ssl.key.password" in files and key is None:
        raise ValueError("KAFKA_SSL_KEY_PASSWORD is set but KAFKA_SSL_KEY_LOCATION is not")
    for prop in ("ssl.ca.location", "ssl.certificate.location"):
        if prop in files and "-----BEGIN CERTIFICATE-----" not in _readable_pem(prop, files[prop]):
            raise ValueError(f"{env_name(prop)}={files[prop]} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    if key is not None:
        text = _readable_pem("ssl.key.location", key)
        if not re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", text):
            raise ValueError(f"KAFKA_SSL_KEY_LOCATION={key} holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
        if "ENCRYPTED" in text and "ssl.key.password" not in files:
            raise ValueError(f"KAFKA_SSL_KEY_LOCATION={key} is encrypted; set KAFKA_SSL_KEY_PASSWORD")


def settings_from_env(brokers: str | None = None, env: Mapping[str, str] = os.environ) -> KafkaSettings:
    """The settings of `env` (`brokers`, e.g. --brokers, wins over KAFKA_BROKERS); ValueError naming
    the variable when one is malformed or a file is missing."""
    ssl_text = env.get("KAFKA_SSL", "").strip().lower()
    if ssl_text not in ("", "true", "false"):
        raise ValueError(f'KAFKA_SSL="{env["KAFKA_SSL"]}" must be true or false')
    files = {p: v for p in SSL_PROPERTIES if (v := env.get(env_name(p), "").strip())}
    _check_ssl_files(files)
    if files and ssl_text == "false":
        raise ValueError(
            f"KAFKA_SSL=false contradicts {', '.join(env_name(p) for p in files)} (TLS files turn TLS on); "
            "unset one or the other"
        )
    return KafkaSettings(
        brokers=(brokers or env.get("KAFKA_BROKERS", "").strip() or LOCAL_BROKERS),
        client_id=env.get("KAFKA_CLIENT_ID") or None,
        sasl=_sasl(env),
        ssl=ssl_text == "true" or bool(files),
        ssl_files=files,
    )


def librdkafka_config(settings: KafkaSettings) -> dict[str, str]:
    """The librdkafka properties every client of the trainer starts from (consumer, producer)."""
    protocol = ("SASL_" if settings.sasl else "") + ("SSL" if settings.ssl else "PLAINTEXT")
    config = {"bootstrap.servers": settings.brokers, "security.protocol": protocol, **settings.ssl_files}
    if settings.client_id:
        config["client.id"] = settings.client_id
    if settings.sasl:
        config |= {
            "sasl.mechanisms": settings.sasl.mechanism,
            "sasl.username": settings.sasl.username,
            "sasl.password": settings.sasl.password,
        }
    return config


# What librdkafka's error callback reports (KafkaError.name()) when a connection is refused for a
# reason no retry cures: the credentials, or TLS.
AUTHENTICATION, SSL = "_AUTHENTICATION", "_SSL"


def _detail(text: str) -> str:
    """librdkafka's message without its `sasl_plaintext://host:port/bootstrap: ` prefix."""
    return re.sub(r"^(\S+://)?\S+/(bootstrap|\d+): ", "", text)


# The first librdkafka whose SCRAM client-final message Kafka 4 accepts: older ones put the client
# nonce in it twice (confluentinc/librdkafka#4895), which Kafka 3 let pass and Kafka 4 refuses as
# invalid credentials.
SCRAM_FIXED = (2, 6, 1)


def _version(text: str) -> tuple[int, ...]:
    """`2.0.2` → (2, 0, 2); a suffix such as `-RC1` is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("-")[0]))


def refused_credentials(user: str, mechanism: str, at: str, librdkafka: str) -> str:
    """The refused-credentials message; with SCRAM on a librdkafka older than `SCRAM_FIXED` (a
    Kafka 4 broker refuses its SCRAM whatever the password) it names that likely cause too."""
    message = f'Kafka refused the credentials of SASL user "{user}" ({mechanism}) on {at}: wrong username or password'
    if mechanism.startswith("SCRAM") and _version(librdkafka) < SCRAM_FIXED:
        message += (
            f" — or, if the broker runs Kafka 4.x, librdkafka {librdkafka} here predates the SCRAM fix of "
            f"{'.'.join(map(str, SCRAM_FIXED))} (confluentinc/librdkafka#4895): use SASL/PLAIN over TLS, "
            "TLS client certificates, or a newer librdkafka"
        )
    return message


def describe_connect_failure(
    settings: KafkaSettings, errors: Sequence[tuple[str, str]], failure: str, librdkafka: str
) -> ConnectionError:
    """Why no connection to `settings.brokers` came about, from the error callback's `(name, text)`
    pairs: refused credentials, a TLS failure, else unreachable (`failure`: librdkafka's own error;
    `librdkafka`: its version, which SCRAM's refusal depends on)."""
    at = settings.brokers
    refused = next((text for name, text in errors if name == AUTHENTICATION), None)
    if refused is not None and settings.sasl:
        user, mechanism = settings.sasl.username, settings.sasl.mechanism
        if "nsupported SASL mechanism" in refused:
            return ConnectionError(
                f"Kafka at {at} does not offer SASL mechanism {mechanism} ({_detail(refused)}); "
                "set KAFKA_SASL_MECHANISM to one it does"
            )
        return ConnectionError(refused_credentials(user, mechanism, at, librdkafka))
    if refused is not None:
        return ConnectionError(f"Kafka at {at} refused the connection ({_detail(refused)})")
    tls = next((text for name, text in errors if name == SSL), None)
    if tls is not None:
        if "certificate verify failed" in tls:
            ca = settings.ssl_files.get("ssl.ca.location")
            trusted = (
                f"the CA in KAFKA_SSL_CA_LOCATION={ca}"
                if ca
                else "a CA this machine trusts; set KAFKA_SSL_CA_LOCATION to the PEM file of the CA that signed it"
            )
            return ConnectionError(
                f"the TLS certificate of Kafka at {at} could not be verified against {trusted} ({_detail(tls)})"
            )
        return ConnectionError(
            f"the TLS handshake with Kafka at {at} failed ({_detail(tls)}); is it a TLS listener? "
            "(KAFKA_SSL and the KAFKA_SSL_* files turn TLS on)"
        )
    seen = next((_detail(text) for name, text in errors if name != "_ALL_BROKERS_DOWN"), failure)
    if "security.protocol" in seen:  # librdkafka's guess: connected, then cut off by the listener
        return ConnectionError(
            f"Kafka at {at} closed the connection ({seen}); does that listener want SASL or TLS? "
            "(KAFKA_SASL_MECHANISM, KAFKA_SSL)"
        )
    return ConnectionError(
        f"cannot reach Kafka at {at} ({seen}); start a broker with `npm run kafka:start` "
        "or point --brokers / KAFKA_BROKERS at one"
    )


def is_refusal(name: str) -> bool:
    """Whether an error callback's error ends the wait for a connection: no retry cures it."""
    return name in (AUTHENTICATION, SSL)


def describe_client_error(settings: KafkaSettings, failure: str) -> ValueError:
    """A client librdkafka would not create (`Failed to create consumer: ssl.key.location failed:
    …`), naming the variable whose file it could not use."""
    found = re.search(r"(ssl\.[a-z.]+\.location) failed: (.*)", failure)
    if found is None:
        return ValueError(f"librdkafka refused the Kafka settings: {failure}")
    prop, why = found.groups()
    hint = ""
    if prop == "ssl.key.location" and "PEM lib" in why:
        hint = "; wrong KAFKA_SSL_KEY_PASSWORD?" if "ssl.key.password" in settings.ssl_files else ""
    elif "key values mismatch" in why:
        hint = "; the key is not the one of KAFKA_SSL_CERTIFICATE_LOCATION"
    return ValueError(f"{env_name(prop)}={settings.ssl_files.get(prop)}: librdkafka cannot use it ({why}){hint}")
