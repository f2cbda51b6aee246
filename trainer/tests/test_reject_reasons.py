"""The trainer's dead letters use the reasons the pipeline uses (schemas/reject-reasons.json), and a
row the TS side refuses (e.g. a `spa-policy-version: abc` header) is refused here with the same one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast, get_args

import pytest

from spa_trainer.data.avro import FrameErrorCode, spa_schemas
from spa_trainer.data.records import ConsumedRecord, Headers, Offsets, RecordLog
from spa_trainer.data.reject_reasons import REJECT_REASONS_FILE, RejectReason, reject_reasons
from spa_trainer.data.rollouts import SourcedRollout, sourced
from spa_trainer.data.sft_rows import BadRow, RowSource
from spa_trainer.topics.dead_letters import JsonlDeadLetters, rejected_record

from .ppo_rollouts import rollout
from .synthetic import sokoban_rows

SHARED = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "reject-reasons.json").read_text("utf-8"))


class MemoryLog:
    """One partition of records held in memory (a topic's records, headers included): the part of
    a `RecordLog` that `RowSource.read` uses."""

    def __init__(self, records: list[ConsumedRecord]) -> None:
        self.records = records

    def describe(self) -> str:
        return "kafka:spa.sft"

    def location(self, partition: int, offset: int) -> str:
        return f"kafka spa.sft[{partition}]@{offset}"

    def end_offsets(self) -> Offsets:
        return {0: len(self.records)}

    def read(self, start: Offsets, end: Offsets) -> Iterator[ConsumedRecord]:
        yield from self.records[start.get(0, 0) : end.get(0, 0)]


def _rows(records: list[ConsumedRecord]) -> RowSource:
    return RowSource(cast(RecordLog, MemoryLog(records)))


def _frame(index: int) -> bytes:
    row = sokoban_rows(index + 1)[index]
    return spa_schemas().encode("SftRow", {**row, "env": "sokoban", "policy_version": 0, "annotation": "gt"})


def _rejects(values: list[tuple[bytes, Headers]], tmp_path: Path) -> tuple[list[str], list[dict[str, object]]]:
    """Reads `values` as SFT rows with `--skip-bad-rows`: the trained rows' ids and the dead letters."""
    source = _rows([ConsumedRecord(0, i, f"k{i}", v, h) for i, (v, h) in enumerate(values)])
    dead_letters = JsonlDeadLetters(tmp_path / "dlq.jsonl")
    source.on_bad_row = lambda bad: dead_letters.reject(bad, "spa.sft")
    rows = [s.row.trajectory_id for s in source.read({}, source.end_offsets())]
    dead_letters.flush()
    lines = (tmp_path / "dlq.jsonl").read_text("utf-8").splitlines() if (tmp_path / "dlq.jsonl").exists() else []
    return rows, [json.loads(line) for line in lines]


def test_the_reasons_are_the_shared_list() -> None:
    assert REJECT_REASONS_FILE.samefile(Path(__file__).resolve().parents[2] / "schemas" / "reject-reasons.json")
    assert reject_reasons() == SHARED
    assert list(get_args(RejectReason)) == list(SHARED)  # the Literal pyright checks, in the file's order
    assert set(get_args(FrameErrorCode)) <= set(SHARED)
    assert "bad-row" not in SHARED


def test_a_bad_policy_version_header_is_dead_lettered_as_bad_header(tmp_path: Path) -> None:
    good = _frame(0)
    bad_header = {"spa-policy-version": b"abc"}
    rows, dead = _rejects([(good, {}), (_frame(1), bad_header), (_frame(2), {"spa-policy-version": b"3"})], tmp_path)
    assert len(rows) == 2  # the rows around it are kept, once each
    [letter] = dead
    assert letter["reason"] == "bad-header" and letter["source"] == "spa.sft[0]@1" and letter["key"] == "k1"
    assert "spa-policy-version='abc'" in str(letter["detail"])
    assert letter["payload_fingerprint"] == _frame(1)[2:10].hex()  # the original frame travels along
    with pytest.raises(BadRow, match=r"\[0\]@1: not an SftRow: bad-header: header spa-policy-version"):
        list(_rows([ConsumedRecord(0, 1, "k", good, bad_header)]).read({}, {0: 1}))


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({"spa-policy-version": b"9007199254740991"}, False),  # Number.MAX_SAFE_INTEGER
        ({"spa-policy-version": b"007"}, False),  # the TS side reads 7
        ({"spa-policy-version": b"9007199254740992"}, True),
        ({"spa-policy-version": b"-1"}, True),
        ({"spa-policy-version": b"3\n"}, True),
        ({"spa-policy-version": "٣".encode()}, True),  # a digit, but not an ASCII one
        ({"traceparent": b"00-" + b"0" * 32 + b"-" + b"0" * 16 + b"-01"}, False),
        ({"traceparent": b"not-a-trace"}, True),
        ({"spa-schema-fingerprint": b"0123456789abcdef"}, False),
        ({"spa-schema-fingerprint": b"0123456789ABCDEF"}, True),
    ],
)
def test_headers_are_checked_as_the_ts_side_checks_them(headers: Headers, refused: bool, tmp_path: Path) -> None:
    _, dead = _rejects([(_frame(0), headers)], tmp_path)
    assert [d["reason"] for d in dead] == (["bad-header"] if refused else [])


def test_bad_rows_are_filed_under_specific_reasons(tmp_path: Path) -> None:
    good = _frame(0)
    rejected = spa_schemas().encode(
        "Rejected",
        {"key": None, "source": "s", "reason": "bad-magic", "detail": "d", "payload": b"", "created_at": 0},
    )
    values = [
        b"\x00\x01garbage",
        b"[1, 2]",
        b'{"prompt": ',
        b"\xc3\x01\x00",
        b"\xc3\x01" + b"\x00" * 8 + good[10:],
        rejected,
        good[:-3],
        good + b"\x00",
        b'{"prompt": "not messages"}',
    ]
    _, dead = _rejects([(v, {}) for v in values], tmp_path)
    assert [d["reason"] for d in dead] == [
        "bad-magic",
        "bad-magic",
        "bad-json",
        "truncated",
        "unknown-fingerprint",
        "wrong-record",
        "truncated",
        "trailing-bytes",
        "bad-record",
    ]


def test_rollouts_check_their_headers_too() -> None:
    good = json.dumps(rollout("t", "g", ["Up"], [0.5])).encode()
    assert sourced(0, 0, "k", good, {"traceparent": b"nope"}).reason == "bad-header"
    assert sourced(0, 0, "k", good, {"spa-policy-version": b"abc"}).reason == "bad-header"


def test_the_dead_letters_refuse_an_unlisted_reason() -> None:
    item = sourced(0, 0, "k", b"\x00", {})
    assert item.reason == "bad-magic"
    assert rejected_record(item, "spa.rollouts")["reason"] == "bad-magic"
    with pytest.raises(ValueError, match="'bad-row' is not in .*reject-reasons.json"):
        rejected_record(SourcedRollout(0, 0, "k", b"\x00", reason="bad-row"), "s")
