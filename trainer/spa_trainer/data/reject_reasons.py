"""Why a record goes to the dead letters: the reason codes the trainer shares with the pipeline.

``schemas/reject-reasons.json`` (code → meaning) is the one list of both languages: the TypeScript
side types its keys (``RejectReason`` in schemas/errors.ts). Here ``RejectReason`` spells them as a
Literal, so pyright checks every reason the trainer writes, ``tests/test_reject_reasons.py`` checks
the Literal against the file, and the dead letters refuse a reason the file does not list
(``dead_letters.rejected_record``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

FrameErrorCode = Literal[
    "bad-magic",
    "truncated",
    "unknown-fingerprint",
    "wrong-record",
    "incompatible-schema",
    "trailing-bytes",
    "bad-body",
]
"""Why an Avro frame does not decode (data/avro.py): the first of the reject reasons."""

RejectReason = Literal[
    FrameErrorCode,
    "bad-json",
    "bad-header",
    "bad-record",
    "annotation-failed",
    "malformed-turn",
    "no-format-match",
    "answer-only",
    "empty-answer",
    "unknown-action",
    "parse-failed",
    "score-mismatch",
    "group-trained",
    "group-overflow",
    "duplicate-trajectory",
    "incomplete-group",
    "too-large",
]

REJECT_REASONS_FILE = Path(__file__).resolve().parents[3] / "schemas" / "reject-reasons.json"
"""The shared list (trainer/spa_trainer/ → repo root → schemas/)."""


@lru_cache(maxsize=1)
def reject_reasons() -> dict[str, str]:
    """Every reason code with its meaning, as schemas/reject-reasons.json lists them."""
    return json.loads(REJECT_REASONS_FILE.read_text(encoding="utf-8"))


class RecordRejected(ValueError):
    """A consumed record a job cannot use: ``reason`` is its dead-letter reason, the message its detail."""

    def __init__(self, reason: RejectReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: RejectReason = reason
