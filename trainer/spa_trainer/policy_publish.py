"""Announce a new policy artifact on spa.policy (design.md Topics: compacted, key "policy").

The record is the `PolicyUpdate` Avro schema (`schemas/PolicyUpdate.avsc`) in single-object
encoding; weights stay on disk and the record carries their folder's URI plus the sha256 of
`model.onnx`, which readers verify before loading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .kafka_source import ck, default_brokers

POLICY_KEY = b"policy"


def policy_update_from_manifest(artifact: Path) -> dict[str, Any]:
    """The PolicyUpdate record for an exported artifact folder (`export.export_policy`)."""
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    return {
        "version": int(manifest["version"]),
        "uri": str(artifact.resolve()),  # a shared file-system path today (design.md Scaling out)
        "sha256": str(manifest["sha256"]),
        "stage": str(manifest["stage"]),
        "step": int(manifest["step"]),
        "model": str(manifest["model"]),
        "format": str(manifest["format"]),
        "created_at": int(manifest["created_at"]),
    }


def encode_policy_update(record: dict[str, Any]) -> bytes:
    """Single-object Avro frame of a PolicyUpdate record."""
    from .avro_records import spa_schemas

    return spa_schemas().encode("PolicyUpdate", record)


def publish_policy_update(record: dict[str, Any], topic: str = "spa.policy", brokers: str | None = None) -> None:
    """Produce the record (idempotent producer, acks=all) and wait until the broker has it."""
    producer = ck.Producer({"bootstrap.servers": default_brokers(brokers), "enable.idempotence": True, "acks": "all"})
    errors: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    headers = [("policy_version", str(record["version"]).encode())]
    producer.produce(topic, key=POLICY_KEY, value=encode_policy_update(record), headers=headers, on_delivery=delivered)
    remaining = producer.flush(30)
    if remaining or errors:
        raise RuntimeError(f"PolicyUpdate v{record['version']} not delivered to {topic}: {errors or 'timeout'}")
