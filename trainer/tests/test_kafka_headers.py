"""The SPA record headers (schemas/kafka-headers.json, shared with streams/kafka/headers.ts): the
trainer reads its header names and their forms from that file, and what it writes matches them."""

from __future__ import annotations

import json
import re
import time

import pytest

from spa_trainer.data.records import KAFKA_HEADERS_FILE, POLICY_VERSION_HEADER, check_spa_headers
from spa_trainer.topics.policy_updates import policy_update_headers

SCHEMA = json.loads(KAFKA_HEADERS_FILE.read_text("utf-8"))
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _valid(headers: list[tuple[str, bytes]]) -> None:
    """Every header is one of the schema's and its value matches the schema's pattern."""
    for name, value in headers:
        spec = SCHEMA["properties"][name]
        assert re.fullmatch(spec["pattern"], value.decode("utf-8")), (name, value)


def test_the_policy_updates_the_trainer_writes_carry_the_shared_headers() -> None:
    record = {"version": 7, "uri": "/p/v000007", "sha256": "0" * 64, "stage": "ppo", "step": 3,
              "model": "tiny", "format": "onnx", "created_at": int(time.time() * 1000)}  # fmt: skip
    headers = policy_update_headers(record, TRACEPARENT)
    _valid(headers)
    assert {name for name, _ in headers} == set(SCHEMA["properties"])


def test_a_header_the_schema_refuses_is_refused_naming_it() -> None:
    check_spa_headers({POLICY_VERSION_HEADER: b"12", "traceparent": TRACEPARENT.encode()})
    for name, bad in (("traceparent", b"00-abc"), ("spa-schema-fingerprint", b"XYZ"), (POLICY_VERSION_HEADER, b"v3")):
        assert not re.fullmatch(SCHEMA["properties"][name]["pattern"], bad.decode())
        with pytest.raises(ValueError, match=f"header {name}="):
            check_spa_headers({name: bad})
    with pytest.raises(ValueError, match="header spa-schema-fingerprint="):
        check_spa_headers({"spa-schema-fingerprint": b"0123456789abcdef\n"})  # `$` is the end of the value
