"""The golden frames written by the TypeScript side decode here, byte for byte and fingerprint
for fingerprint (test/fixtures/avro, written by test/fixtures/avro/write-golden.ts)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastavro import json_reader
from fastavro.schema import fingerprint

from spa_trainer.data.avro import (
    SCHEMA_DIR,
    FrameDecodeError,
    RecordEncodeError,
    SchemaVersion,
    encode_with,
    frame_single_object,
    spa_schemas,
    split_single_object,
)

FIXTURES = SCHEMA_DIR.parent / "test" / "fixtures" / "avro"
GOLDEN = sorted(FIXTURES.glob("*.bin"))


def _version_of(path: Path) -> SchemaVersion:
    name, version = path.stem.split(".v")
    return next(v for v in spa_schemas().versions(name) if v.version == int(version))


def _avro_json_record(path: Path, version: SchemaVersion) -> dict[str, Any]:
    """The committed Avro-JSON record, read by fastavro's JSON decoder (one record per line)."""
    text = json.dumps(json.loads(path.with_suffix(".json").read_text(encoding="utf-8")))
    return next(iter(json_reader(io.StringIO(text), version.schema)))


def test_there_are_golden_frames_for_every_record() -> None:
    assert {p.stem for p in GOLDEN} >= {
        "Trajectory.v1",
        "SftRow.v0",
        "SftRow.v1",
        "Rollout.v1",
        "Rejected.v1",
        "PolicyUpdate.v1",
    }


def test_fingerprints_and_canonical_forms_equal_the_typescript_ones() -> None:
    pinned = json.loads((FIXTURES / "fingerprints.json").read_text(encoding="utf-8"))
    ours = [
        {"name": v.name, "version": v.version, "fingerprint": v.fingerprint.hex(), "canonical_form": v.canonical_form}
        for name in sorted({p["name"] for p in pinned})
        for v in spa_schemas().versions(name)
    ]
    key = lambda p: (p["name"], p["version"])
    assert sorted(ours, key=key) == sorted(pinned, key=key)


def test_fastavro_crc64_avro_matches_the_spec_vectors() -> None:
    spec = json.loads((FIXTURES / "avro-spec-schema-tests.json").read_text(encoding="utf-8"))
    vectors = [v for v in spec["vectors"] if v["fingerprint"] is not None]
    assert len(vectors) >= 25
    for vector in vectors:
        wire = (int(vector["fingerprint"]) % 2**64).to_bytes(8, "little").hex()
        assert fingerprint(vector["canonical"], "CRC-64-AVRO") == wire, vector["id"]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_frame_header_names_its_writer(path: Path) -> None:
    header, _ = split_single_object(path.read_bytes())
    assert header == _version_of(path).fingerprint


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_frame_decodes_and_reencodes_byte_identically(path: Path) -> None:
    version = _version_of(path)
    frame = path.read_bytes()
    expected = _avro_json_record(path, version)
    assert encode_with(version, expected) == frame
    decoded = spa_schemas().decode(version.name, frame)
    if version is spa_schemas().current(version.name):
        assert decoded == expected
        assert spa_schemas().encode(version.name, decoded) == frame
    else:
        assert {k: decoded[k] for k in expected} == expected


def test_sft_row_v0_gets_the_v1_defaults() -> None:
    path = FIXTURES / "SftRow.v0.bin"
    old = _avro_json_record(path, _version_of(path))
    assert "annotation" not in old
    row = spa_schemas().decode("SftRow", path.read_bytes())
    assert row == {**old, "annotation": "gt", "mask_transitions": False}


def test_timestamps_decode_as_utc_datetimes() -> None:
    update = spa_schemas().decode("PolicyUpdate", (FIXTURES / "PolicyUpdate.v1.bin").read_bytes())
    assert update["created_at"].isoformat() == "2026-01-01T00:00:00.123000+00:00"
    assert update["stage"] == "ppo"


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda f: b'{"x": 1}', "bad-magic"),
        (lambda f: b"", "truncated"),
        (lambda f: f[:6], "truncated"),
        (lambda f: f[:-3], "truncated"),
        (lambda f: f + b"\x00", "trailing-bytes"),
        (lambda f: frame_single_object(bytes(range(1, 9)), f[10:]), "unknown-fingerprint"),
    ],
    ids=["json", "empty", "short-header", "short-body", "trailing", "unknown"],
)
def test_bad_frames_fail_with_the_typescript_codes(mutate: Any, code: str) -> None:
    frame = (FIXTURES / "Rollout.v1.bin").read_bytes()
    with pytest.raises(FrameDecodeError) as caught:
        spa_schemas().decode("Rollout", mutate(frame))
    assert caught.value.code == code


def test_a_frame_of_another_record_is_rejected() -> None:
    with pytest.raises(FrameDecodeError, match="frame holds spa.v1.PolicyUpdate v1, expected spa.v1.Rollout") as caught:
        spa_schemas().decode("Rollout", (FIXTURES / "PolicyUpdate.v1.bin").read_bytes())
    assert caught.value.code == "wrong-record"
    assert caught.value.fingerprint == spa_schemas().current("PolicyUpdate").fingerprint


def test_encoding_a_bad_record_names_the_field() -> None:
    update = spa_schemas().decode("PolicyUpdate", (FIXTURES / "PolicyUpdate.v1.bin").read_bytes())
    with pytest.raises(RecordEncodeError, match="stage"):
        spa_schemas().encode("PolicyUpdate", {**update, "stage": "rlhf"})
