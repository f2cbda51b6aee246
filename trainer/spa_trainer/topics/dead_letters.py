"""Dead letters: every record a trainer cannot train on, with its reason (topic spa.dlq).

A `Rejected` record (schemas/Rejected.avsc) carries the original key and bytes, the reason code
and a detail naming the bad input, exactly as the TS consumers write them
(`streams/kafka/spa-records.ts`), so one tool reads every stage's rejects (a rejected record goes to
the DLQ, never to /dev/null). Writes are at-least-once: a rejection made after the
last checkpoint is made again when a restart re-reads its record.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Protocol

from ..data.avro import SINGLE_OBJECT_MAGIC, spa_schemas
from ..data.records import SCHEMA_FINGERPRINT_HEADER, TRACEPARENT_HEADER, Headers
from ..data.reject_reasons import REJECT_REASONS_FILE, reject_reasons


class Rejection(Protocol):
    """A record that cannot be trained on: where it was, its key, bytes and headers as read, and
    why (a `rollout_source.SourcedRollout` with a reason, a `data.BadRow`); the reason is a code of
    schemas/reject-reasons.json."""

    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> str | None: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def headers(self) -> Headers: ...
    @property
    def reason(self) -> str: ...
    @property
    def detail(self) -> str: ...


class DeadLetters(Protocol):
    """Where rejected records go (`Rejected` records, schemas/Rejected.avsc)."""

    def reject(self, item: Rejection, source: str) -> None:
        """Queue one rejection."""
        ...

    def flush(self) -> None:
        """Block until every queued rejection is durable (called before a checkpoint)."""
        ...


def rejected_record(item: Rejection, source: str) -> dict[str, Any]:
    """The `Rejected` record for a rejected item (same fields as the TS `decodeKafkaRecord`); its
    reason must be one of schemas/reject-reasons.json, the list the TS side files under too."""
    if item.reason not in reject_reasons():
        raise ValueError(f"reject reason {item.reason!r} is not in {REJECT_REASONS_FILE}; add it there first")
    framed = len(item.payload) >= 10 and item.payload.startswith(SINGLE_OBJECT_MAGIC)
    return {
        "key": item.key,
        "source": f"{source}[{item.partition}]@{item.offset}",
        "reason": item.reason,
        "detail": item.detail,
        "payload": item.payload,
        "payload_fingerprint": item.payload[2:10] if framed else None,
        "created_at": int(time.time() * 1000),
    }


class JsonlDeadLetters:
    """Rejections appended to a JSONL file (payload as UTF-8 text, fingerprint as hex)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[str] = []

    def reject(self, item: Rejection, source: str) -> None:
        record = rejected_record(item, source)
        record["payload"] = item.payload.decode("utf-8", "replace")
        fingerprint = record["payload_fingerprint"]
        record["payload_fingerprint"] = fingerprint.hex() if fingerprint is not None else None
        self._lines.append(json.dumps(record, ensure_ascii=False))

    def flush(self) -> None:
        if self._lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in self._lines))
            self._lines = []


def dlq_headers(item: Rejection) -> list[tuple[str, bytes]]:
    """Rejected's schema fingerprint, plus the original record's traceparent (one trace per sample)."""
    fingerprint = spa_schemas().current("Rejected").fingerprint.hex().encode()
    headers = [(SCHEMA_FINGERPRINT_HEADER, fingerprint)]
    if TRACEPARENT_HEADER in item.headers:
        headers.append((TRACEPARENT_HEADER, item.headers[TRACEPARENT_HEADER]))
    return headers


class KafkaDeadLetters:
    """Rejections produced to a topic (idempotent producer, acks=all), key = the original key."""

    def __init__(self, topic: str, brokers: str | None) -> None:
        from ..kafka.client import KafkaSink  # optional dependency: confluent-kafka

        self.sink = KafkaSink(topic, brokers)

    def reject(self, item: Rejection, source: str) -> None:
        value = spa_schemas().encode("Rejected", rejected_record(item, source))
        self.sink.produce(item.key.encode() if item.key is not None else None, value, dlq_headers(item))

    def flush(self) -> None:
        self.sink.flush("rejected records")


def open_dead_letters(spec: str, *, brokers: str | None = None) -> DeadLetters:
    """`kafka:<topic>` (e.g. kafka:spa.dlq) or `jsonl:<path>`."""
    kind, _, target = spec.partition(":")
    if kind == "jsonl" and target:
        return JsonlDeadLetters(Path(target))
    if kind == "kafka" and target:
        return KafkaDeadLetters(target, brokers)
    raise ValueError(f"dead-letter target {spec!r}: expected kafka:<topic> or jsonl:<path>")
