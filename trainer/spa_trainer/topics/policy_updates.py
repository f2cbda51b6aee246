"""Announce a new policy artifact on spa.policy (a compacted topic, key "policy": the latest version).

The record is the `PolicyUpdate` Avro schema (`schemas/PolicyUpdate.avsc`) in single-object
encoding; weights stay on disk and the record carries their folder's URI plus the sha256 of
`model.onnx`, which readers verify before loading.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..data.avro import spa_schemas
from ..data.records import POLICY_VERSION_HEADER, SCHEMA_FINGERPRINT_HEADER, TRACEPARENT_HEADER

POLICY_KEY = b"policy"
# W3C traceparent, checked as streams/kafka/headers.ts checks it
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def policy_update_from_manifest(artifact: Path) -> dict[str, Any]:
    """The PolicyUpdate record for an exported artifact folder (`export.export_policy`)."""
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    return {
        "version": int(manifest["version"]),
        "uri": str(artifact.resolve()),  # a shared file-system path today; object storage once machines share no disk
        "sha256": str(manifest["sha256"]),
        "stage": str(manifest["stage"]),
        "step": int(manifest["step"]),
        "model": str(manifest["model"]),
        "format": str(manifest["format"]),
        "created_at": int(manifest["created_at"]),
    }


def encode_policy_update(record: dict[str, Any]) -> bytes:
    """Single-object Avro frame of a PolicyUpdate record."""
    return spa_schemas().encode("PolicyUpdate", record)


def policy_update_headers(record: dict[str, Any], traceparent: str | None = None) -> list[tuple[str, bytes]]:
    """`spa-policy-version` (decimal), `spa-schema-fingerprint` (CRC-64-AVRO of PolicyUpdate's
    canonical form, 16 lowercase hex in wire order, as TS `fingerprintHex`) and, when given, the
    W3C `traceparent` of the step that produced the policy."""
    version = int(record["version"])
    if version < 0:
        raise ValueError(f"PolicyUpdate version {version} must be a non-negative integer")
    headers = [
        (POLICY_VERSION_HEADER, str(version).encode()),
        (SCHEMA_FINGERPRINT_HEADER, spa_schemas().current("PolicyUpdate").fingerprint.hex().encode()),
    ]
    if traceparent is not None:
        if not _TRACEPARENT.match(traceparent):  # TS readers dead-letter a malformed one
            raise ValueError(f"traceparent {traceparent!r} is not W3C 00-<32 hex>-<16 hex>-<2 hex>")
        headers.append((TRACEPARENT_HEADER, traceparent.encode()))
    return headers


def publish_policy_update(
    record: dict[str, Any], topic: str = "spa.policy", brokers: str | None = None, traceparent: str | None = None
) -> None:
    """Produce the record (idempotent producer, acks=all) and wait until the broker has it."""
    from ..kafka.client import KafkaSink  # optional dependency: confluent-kafka

    sink = KafkaSink(topic, brokers)
    sink.produce(POLICY_KEY, encode_policy_update(record), policy_update_headers(record, traceparent))
    sink.flush(f"PolicyUpdate v{record['version']}")
