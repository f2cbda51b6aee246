"""The trainer's tracer honours the standard OpenTelemetry variables the generator reads
(infra/otel/README.md): endpoint, headers, service name, resource attributes, exporter none."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from spa_trainer.otlp import tracer_from_env

TRACEPARENT = b"00-" + b"ab" * 16 + b"-" + b"cd" * 8 + b"-01"


class _Receiver(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, dict[str, str], dict[str, object]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        _Receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the default handler logs every request on stderr."""


@pytest.fixture()
def receiver() -> Iterator[str]:
    _Receiver.requests = []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _resource(body: dict[str, object]) -> dict[str, object]:
    resource_spans = body["resourceSpans"]
    assert isinstance(resource_spans, list)
    return {a["key"]: a["value"]["stringValue"] for a in resource_spans[0]["resource"]["attributes"]}


def test_off_without_an_endpoint_with_exporter_none_or_sdk_disabled(receiver: str) -> None:
    assert tracer_from_env(env={}) is None
    assert tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_TRACES_EXPORTER": "none"}) is None
    assert tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_TRACES_EXPORTER": "console"}) is None
    assert tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_SDK_DISABLED": "true"}) is None
    assert tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_TRACES_EXPORTER": "otlp"}) is not None


def test_exports_with_headers_service_name_and_resource_attributes(receiver: str) -> None:
    tracer = tracer_from_env(
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s%3Dcret,x-team=lab",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attributes,deployment.environment.name=ci",
        }
    )
    assert tracer is not None
    with tracer.traced_step(3, [("spa.rollouts", {"traceparent": TRACEPARENT})]):
        pass
    [(path, headers, body)] = _Receiver.requests
    assert path == "/v1/traces"
    assert headers["x-api-key"] == "s=cret" and headers["x-team"] == "lab"
    assert _resource(body) == {"service.name": "from-attributes", "deployment.environment.name": "ci"}


def test_service_name_variable_wins_and_traces_endpoint_is_a_full_url(receiver: str) -> None:
    tracer = tracer_from_env(
        env={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver}/custom/traces",
            "OTEL_SERVICE_NAME": "trainer-7",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored",
        }
    )
    assert tracer is not None
    with tracer.traced_step(1, [("spa.rollouts", {"traceparent": TRACEPARENT})]):
        pass
    [(path, _, body)] = _Receiver.requests
    assert path == "/custom/traces"
    assert _resource(body)["service.name"] == "trainer-7"


def test_a_malformed_pair_names_the_variable(receiver: str) -> None:
    with pytest.raises(ValueError, match="OTEL_RESOURCE_ATTRIBUTES: 'oops' is not key=value"):
        tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_RESOURCE_ATTRIBUTES": "oops"})
