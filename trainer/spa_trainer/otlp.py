"""Trainer-side tracing: continue the generator's trace from Kafka ``traceparent`` headers.

Both trainers use it (infra/otel/README.md); a no-op unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(``tracer_from_env`` reads the standard variables that apply to it).
Why hand-written: the local wheel index has opentelemetry-sdk 1.45.0 and its OTLP/HTTP
exporter, but not their pinned dependencies (opentelemetry-semantic-conventions 0.66b0,
opentelemetry-exporter-otlp-common, opentelemetry-exporter-http-transport), so
``import opentelemetry.sdk.trace`` fails here. This module is the small part of the SDK the
trainer needs, stdlib only: W3C Trace Context ``traceparent`` parsing (the format the TS side
writes, streams/kafka/headers.ts), spans with parents and links, and export as OTLP/JSON over
HTTP to ``<endpoint>/v1/traces``. When the full SDK becomes installable, replace it by the SDK's
tracer and its TraceContext propagator; the spans stay the same.

Span shape for one optimizer step (messaging semconv, batch processing; the attribute names are
the generator's, ``messagingAttributes`` in streams/telemetry/kafka-spans.ts):
- ``train step N`` (INTERNAL): child of the first sampled record's context, linked to every
  consumed record's context; so the step sits in a generator trace and points at all of them.
- ``process <topic>`` (CONSUMER) per consumed record: child of that record's context, linked
  to the step span, so every episode's trace reaches the trainer.

Usage::

    tracer = OtlpJsonTracer("http://127.0.0.1:4318", service_name="spa-trainer")
    with tracer.training_step(step, records) as step_span:   # records: [(topic, headers)]
        ...  # the optimizer step
    tracer.flush()

or, as the trainers do (a no-op unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set)::

    tracer = tracer_from_env("spa-trainer")          # None without the variable
    with tracer.traced_step(step, records, "ppo") if tracer else contextlib.nullcontext():
        ...  # the optimizer step; the spans are exported when the block ends
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CONSUMER = 5
STATUS_ERROR = 2


@dataclass(frozen=True)
class SpanContext:
    """A W3C span context: 32/16 lowercase hex ids and the sampled flag."""

    trace_id: str
    span_id: str
    sampled: bool

    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"


def parse_traceparent(value: str | bytes | None) -> SpanContext | None:
    """The context a ``traceparent`` names, or None when absent or invalid (version ff, all-zero ids)."""
    if value is None:
        return None
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    match = _TRACEPARENT.match(text.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags = match.groups()
    if version == "ff" or trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    return SpanContext(trace_id, span_id, bool(int(flags, 16) & 1))


def context_from_headers(headers: Mapping[str, bytes | str] | Sequence[tuple[str, bytes]] | None) -> SpanContext | None:
    """Reads ``traceparent`` from Kafka headers (a dict, or confluent-kafka's list of pairs)."""
    if headers is None:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    value = None
    for key, raw in pairs:
        if key == "traceparent":
            value = raw  # a header that occurs twice keeps its last value, as in streams/kafka
    return parse_traceparent(value)


@dataclass
class Span:
    """One span being recorded; end it once (the context managers do)."""

    name: str
    context: SpanContext
    parent_span_id: str
    kind: int
    start_ns: int
    attributes: dict[str, object] = field(default_factory=dict)
    links: list[SpanContext] = field(default_factory=list)
    end_ns: int | None = None
    status_code: int = 0
    status_message: str = ""

    def set_attribute(self, key: str, value: object) -> None:
        self.attributes[key] = value

    def add_link(self, context: SpanContext) -> None:
        self.links.append(context)


def _any_value(value: object) -> dict[str, object]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, object]) -> list[dict[str, object]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


class OtlpJsonTracer:
    """Records spans and posts them as OTLP/JSON; spans of unsampled parents are not kept."""

    def __init__(
        self,
        endpoint: str,
        service_name: str = "spa-trainer",
        resource_attributes: Mapping[str, object] | None = None,
        timeout_s: float = 10.0,
        headers: Mapping[str, str] | None = None,
        traces_url: str | None = None,
    ) -> None:
        """``endpoint`` is the OTLP base URL (spans go to ``<endpoint>/v1/traces``) unless
        ``traces_url`` names the full URL; ``headers`` go with every export (e.g. an API key)."""
        for url in (endpoint, traces_url):
            if url is not None and not re.match(r"^https?://[^/]", url):
                raise ValueError(f"OTLP endpoint {url!r} must be an http(s) URL such as http://127.0.0.1:4318")
        self._url = traces_url or endpoint.rstrip("/") + "/v1/traces"
        self._resource = {**(resource_attributes or {}), "service.name": service_name}
        self._timeout_s = timeout_s
        self._headers = {**(headers or {}), "content-type": "application/json"}
        self._finished: list[Span] = []

    def start_span(
        self,
        name: str,
        parent: SpanContext | None = None,
        kind: int = SPAN_KIND_INTERNAL,
        attributes: Mapping[str, object] | None = None,
        links: Sequence[SpanContext] = (),
    ) -> Span:
        """A child of ``parent`` (same trace id), or the root of a new sampled trace."""
        trace_id = parent.trace_id if parent else secrets.token_hex(16)
        sampled = parent.sampled if parent else True
        context = SpanContext(trace_id, secrets.token_hex(8), sampled)
        return Span(
            name, context, parent.span_id if parent else "", kind, time.time_ns(), dict(attributes or {}), list(links)
        )

    def end_span(self, span: Span) -> None:
        if span.end_ns is not None:
            return
        span.end_ns = time.time_ns()
        if span.context.sampled:
            self._finished.append(span)

    @contextlib.contextmanager
    def span(self, name: str, **kwargs: Any) -> Iterator[Span]:
        """Runs a block inside a span; an exception marks it failed and propagates."""
        span = self.start_span(name, **kwargs)
        try:
            yield span
        except BaseException as error:
            span.status_code, span.status_message = STATUS_ERROR, f"{type(error).__name__}: {error}"
            raise
        finally:
            self.end_span(span)

    @contextlib.contextmanager
    def training_step(
        self,
        step: int,
        records: Sequence[tuple[str, Mapping[str, bytes | str] | Sequence[tuple[str, bytes]] | None]],
        stage: str = "ppo",
        max_record_spans: int = 1024,
    ) -> Iterator[Span]:
        """The step span (see module doc) plus one ``process`` span per consumed record.

        ``records`` are (topic, headers) pairs; at most ``max_record_spans`` get their own span
        (a bound on per-step cost), all of them get a link from the step span.
        """
        contexts = [(topic, context_from_headers(headers)) for topic, headers in records]
        linked = [c for _, c in contexts if c is not None]
        parent = next((c for c in linked if c.sampled), None)
        attributes = {"spa.step": step, "spa.stage": stage, "messaging.batch.message_count": len(records)}
        with self.span(f"train step {step}", parent=parent, attributes=attributes, links=linked) as step_span:
            for topic, context in contexts[:max_record_spans]:
                if context is None:
                    continue
                record = self.start_span(
                    f"process {topic}",
                    parent=context,
                    kind=SPAN_KIND_CONSUMER,
                    attributes={
                        "messaging.system.name": "kafka",
                        "messaging.destination.name": topic,
                        "messaging.operation.type": "process",
                        "messaging.operation.name": "process",
                    },
                    links=[step_span.context],
                )
                self.end_span(record)
            yield step_span

    @contextlib.contextmanager
    def traced_step(
        self,
        step: int,
        records: Sequence[tuple[str, Mapping[str, bytes | str] | Sequence[tuple[str, bytes]] | None]],
        stage: str = "ppo",
    ) -> Iterator[Span]:
        """``training_step`` then ``flush``: one export per optimizer step. An export failure is
        reported on stderr and the spans are dropped; telemetry never stops training."""
        try:
            with self.training_step(step, records, stage=stage) as span:
                yield span
        finally:
            try:
                self.flush()
            except RuntimeError as error:
                print(f"[otel] {error}", file=sys.stderr, flush=True)

    def _request(self, spans: Sequence[Span]) -> dict[str, object]:
        def encode(span: Span) -> dict[str, object]:
            return {
                "traceId": span.context.trace_id,
                "spanId": span.context.span_id,
                "parentSpanId": span.parent_span_id,
                "name": span.name,
                "kind": span.kind,
                "startTimeUnixNano": str(span.start_ns),
                "endTimeUnixNano": str(span.end_ns),
                "attributes": _attributes(span.attributes),
                "links": [{"traceId": link.trace_id, "spanId": link.span_id} for link in span.links],
                "status": {"code": span.status_code, "message": span.status_message},
            }

        return {
            "resourceSpans": [
                {
                    "resource": {"attributes": _attributes(self._resource)},
                    "scopeSpans": [{"scope": {"name": "spa_trainer"}, "spans": [encode(s) for s in spans]}],
                }
            ]
        }

    def flush(self) -> int:
        """Posts finished spans; returns how many. Raises naming the endpoint when it refuses."""
        spans, self._finished = self._finished, []
        if not spans:
            return 0
        body = json.dumps(self._request(spans)).encode("utf-8")
        request = urllib.request.Request(self._url, data=body, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                response.read()
        except OSError as error:
            raise RuntimeError(f"OTLP export of {len(spans)} spans to {self._url} failed: {error}") from error
        return len(spans)


def _key_values(text: str, variable: str) -> dict[str, str]:
    """``key=value`` pairs split by commas, percent-decoded: the format of ``OTEL_RESOURCE_ATTRIBUTES``
    and ``OTEL_EXPORTER_OTLP_HEADERS``; a pair without ``=`` raises naming the variable."""
    pairs: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{variable}: {pair!r} is not key=value")
        pairs[urllib.parse.unquote(key.strip())] = urllib.parse.unquote(value.strip())
    return pairs


def tracer_from_env(service_name: str = "spa-trainer", env: Mapping[str, str] | None = None) -> OtlpJsonTracer | None:
    """A tracer configured by the standard variables the generator reads (infra/otel/README.md), or
    None when it has nowhere to export: no ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``…_TRACES_ENDPOINT``,
    a full URL), ``OTEL_TRACES_EXPORTER`` without ``otlp`` (``none``; this tracer exports only
    OTLP, always as JSON over HTTP), or ``OTEL_SDK_DISABLED`` true. The resource is ``service_name``
    under ``OTEL_RESOURCE_ATTRIBUTES`` under ``OTEL_SERVICE_NAME``; ``OTEL_EXPORTER_OTLP_HEADERS``
    (or ``…_TRACES_HEADERS``) go with every export."""
    env = os.environ if env is None else env

    def get(name: str) -> str:
        return env.get(name, "").strip()

    endpoint, traces_url = get("OTEL_EXPORTER_OTLP_ENDPOINT"), get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    exporters = [e.strip() for e in get("OTEL_TRACES_EXPORTER").split(",") if e.strip()] or ["otlp"]
    disabled = get("OTEL_SDK_DISABLED").lower() in ("1", "true", "yes", "on")
    if not (endpoint or traces_url) or "otlp" not in exporters or disabled:
        return None
    resource = _key_values(get("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES")
    headers = _key_values(
        get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or get("OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS"
    )
    return OtlpJsonTracer(
        endpoint or traces_url,
        service_name=get("OTEL_SERVICE_NAME") or resource.pop("service.name", "") or service_name,
        resource_attributes=resource,
        headers=headers,
        traces_url=traces_url or None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Emits one training step over records given by their traceparents; prints the span ids."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--endpoint", required=True, help="OTLP/HTTP base URL, e.g. http://127.0.0.1:4318")
    parser.add_argument("--traceparent", action="append", default=[], help="a consumed record's header (repeat)")
    parser.add_argument("--topic", default="spa.rollouts")
    parser.add_argument("--step", type=int, default=1)
    args = parser.parse_args(argv)
    tracer = tracer_from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": args.endpoint})
    assert tracer is not None
    records = [(args.topic, {"traceparent": tp.encode()}) for tp in args.traceparent]
    with tracer.training_step(args.step, records) as step_span:
        pass
    exported = tracer.flush()
    json.dump(
        {"trace_id": step_span.context.trace_id, "span_id": step_span.context.span_id, "exported": exported}, sys.stdout
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
