"""Avro records on the SPA topics, read and written the way the TypeScript side does.

The schemas are the repository's ``schemas/*.avsc`` (current versions) plus
``schemas/history/<Name>.v<N>.avsc`` (older released versions), the single source of truth for
both languages. Records travel as Avro single-object frames: ``C3 01`` +
the 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's Parsing Canonical Form +
the Avro binary body. Decoding looks the writer schema up by fingerprint and resolves it against
the current (reader) schema, so rows written by an older producer still load.

fastavro computes the Parsing Canonical Form (``to_parsing_canonical_form``) and CRC-64-AVRO
(``fingerprint(..., "CRC-64-AVRO")``, returned as hex in wire order); nothing here is
hand-rolled. ``timestamp-millis`` fields decode to timezone-aware ``datetime`` (fastavro's
logical types); encoding accepts either a ``datetime`` or epoch milliseconds.

Failure codes match ``schemas/errors.ts`` so both sides route rejects to spa.dlq alike; each is a
reason of schemas/reject-reasons.json. ``decode_value`` is what the jobs read a record with: a frame,
or a JSON object from a hand-made topic or a JSONL file.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import fingerprint as avro_fingerprint
from fastavro.schema import parse_schema, to_parsing_canonical_form
from fastavro.validation import validate

from .reject_reasons import FrameErrorCode, RecordRejected

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "schemas"
"""The repository's schema directory (trainer/spa_trainer/ → repo root → schemas/)."""

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
"""Marker bytes every single-object frame starts with (Avro spec, single-object encoding)."""

HEADER_LENGTH = 10
"""Marker plus 8-byte fingerprint: the body starts here."""

_HISTORY_FILE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.v(\d+)\.avsc$")

Record = dict[str, Any]
"""A decoded record: field name → value (fastavro's representation)."""


class FrameDecodeError(ValueError):
    """A frame that cannot become a record; ``code`` is the spa.dlq reason."""

    def __init__(self, code: FrameErrorCode, message: str, fingerprint: bytes | None = None) -> None:
        super().__init__(message)
        self.code: FrameErrorCode = code
        self.fingerprint = fingerprint


class RecordEncodeError(ValueError):
    """A record that does not match its schema (the message names the field)."""


class SchemaLoadError(ValueError):
    """A schema file that is unreadable, misnamed or a duplicate version."""


@dataclass(frozen=True)
class SchemaVersion:
    """One compiled version of one record schema."""

    name: str
    full_name: str
    version: int
    schema: Any
    """fastavro's parsed schema (opaque: pass it back to fastavro)."""
    canonical_form: str
    fingerprint: bytes
    """CRC-64-AVRO of ``canonical_form``, 8 bytes in wire (little-endian) order."""
    source: str


def compile_schema_version(schema_json: Mapping[str, Any], version: int, source: str) -> SchemaVersion:
    """Parses one record schema with its own named-type table (Message is declared per file)."""
    try:
        parsed = parse_schema(dict(schema_json), named_schemas={})
    except Exception as error:  # fastavro raises several exception types for bad schemas
        raise SchemaLoadError(f"{source}: not a valid Avro schema: {error}") from error
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise SchemaLoadError(f"{source}: top-level schema must be a named record")
    full_name = str(parsed["name"])
    canonical = to_parsing_canonical_form(parsed)
    return SchemaVersion(
        name=full_name.rsplit(".", 1)[-1],
        full_name=full_name,
        version=version,
        schema=parsed,
        canonical_form=canonical,
        fingerprint=bytes.fromhex(avro_fingerprint(canonical, "CRC-64-AVRO")),
        source=source,
    )


def _read_json(path: Path) -> Mapping[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SchemaLoadError(f"{path}: cannot read schema JSON: {error}") from error


def _expect_name(version: SchemaVersion, expected: str) -> None:
    if version.name != expected:
        raise SchemaLoadError(f"{version.source} declares record {version.full_name}; the file name says {expected}")


def load_schema_versions(schema_dir: Path = SCHEMA_DIR) -> list[SchemaVersion]:
    """Every version of every record: history files, then the current one (same rules as schemas/load.ts)."""
    history: list[SchemaVersion] = []
    history_dir = schema_dir / "history"
    for path in sorted(history_dir.glob("*.avsc")) if history_dir.is_dir() else []:
        match = _HISTORY_FILE.match(path.name)
        if not match:
            raise SchemaLoadError(f"{path}: history files must be named <Name>.v<N>.avsc")
        old = compile_schema_version(_read_json(path), int(match.group(2)), str(path))
        _expect_name(old, match.group(1))
        history.append(old)
    versions: list[SchemaVersion] = []
    for path in sorted(schema_dir.glob("*.avsc")):
        older = [v for v in history if v.name == path.stem]
        current = compile_schema_version(_read_json(path), max([1, *(v.version + 1 for v in older)]), str(path))
        _expect_name(current, path.stem)
        versions.extend([*older, current])
    orphans = [v.source for v in history if v not in versions]
    if orphans:
        raise SchemaLoadError(f"history without a current schema: {', '.join(orphans)}")
    return versions


def frame_single_object(fingerprint: bytes, body: bytes) -> bytes:
    """``C3 01`` + fingerprint (8 bytes, wire order) + body."""
    if len(fingerprint) != 8:
        raise ValueError(f"fingerprint must be 8 bytes (CRC-64-AVRO), got {len(fingerprint)}")
    return SINGLE_OBJECT_MAGIC + fingerprint + body


def split_single_object(frame: bytes) -> tuple[bytes, bytes]:
    """(fingerprint, body) of a frame; ``FrameDecodeError`` on a bad marker or short header."""
    if frame[:2] != SINGLE_OBJECT_MAGIC[: len(frame[:2])]:
        raise FrameDecodeError(
            "bad-magic", f"not an Avro single-object frame: starts with {frame[:4].hex(' ')}, expected c3 01"
        )
    if len(frame) < HEADER_LENGTH:
        raise FrameDecodeError(
            "truncated", f"single-object frame of {len(frame)} bytes is shorter than its {HEADER_LENGTH}-byte header"
        )
    return bytes(frame[2:HEADER_LENGTH]), bytes(frame[HEADER_LENGTH:])


class _ExactReader(io.BytesIO):
    """Raises EOFError on a short read: fastavro would otherwise return a cut string silently."""

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if size is not None and size >= 0 and len(data) < size:
            raise EOFError(f"needed {size} bytes, {len(data)} left")
        return data


class SchemaRegistry:
    """Fingerprint → schema version; encodes with the current version, decodes any known one."""

    def __init__(self, versions: Iterable[SchemaVersion]) -> None:
        self._by_fingerprint: dict[bytes, SchemaVersion] = {}
        self._current: dict[str, SchemaVersion] = {}
        for version in versions:
            clash = self._by_fingerprint.get(version.fingerprint)
            if clash is not None:
                raise SchemaLoadError(f"{version.source} has the same fingerprint as {clash.source}")
            self._by_fingerprint[version.fingerprint] = version
            current = self._current.get(version.name)
            if current is None or version.version > current.version:
                self._current[version.name] = version

    def current(self, name: str) -> SchemaVersion:
        """The current (reader and writer) version of record ``name``."""
        try:
            return self._current[name]
        except KeyError:
            raise KeyError(f"unknown record {name}; known: {', '.join(sorted(self._current))}") from None

    def versions(self, name: str) -> list[SchemaVersion]:
        """All registered versions of ``name``, oldest first."""
        return sorted((v for v in self._by_fingerprint.values() if v.name == name), key=lambda v: v.version)

    def writer_of(self, frame: bytes) -> SchemaVersion:
        """The writer schema named by a frame's header."""
        fingerprint, _ = split_single_object(frame)
        writer = self._by_fingerprint.get(fingerprint)
        if writer is None:
            known = ", ".join(f"{v.name} v{v.version} {v.fingerprint.hex()}" for v in self._by_fingerprint.values())
            raise FrameDecodeError(
                "unknown-fingerprint",
                f"no known schema has fingerprint {fingerprint.hex()}; known: {known}",
                fingerprint,
            )
        return writer

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """A single-object frame of ``record`` under the current schema of ``name``."""
        return encode_with(self.current(name), record)

    def decode(self, name: str, frame: bytes) -> Record:
        """Decodes a frame of any known version of ``name`` into the current shape."""
        reader = self.current(name)
        writer = self.writer_of(frame)
        if writer.full_name != reader.full_name:
            raise FrameDecodeError(
                "wrong-record",
                f"frame holds {writer.full_name} v{writer.version}, expected {reader.full_name}",
                writer.fingerprint,
            )
        _, body = split_single_object(frame)
        return _decode_body(body, writer, reader)


def _decode_body(body: bytes, writer: SchemaVersion, reader: SchemaVersion) -> Record:
    what = f"{writer.name} v{writer.version} body"
    stream = _ExactReader(body)
    try:
        record = schemaless_reader(stream, writer.schema, None if writer is reader else reader.schema)
    except EOFError as error:
        raise FrameDecodeError("truncated", f"{what} ends early (truncated frame)", writer.fingerprint) from error
    except Exception as error:  # fastavro signals bad data with many exception types
        code: FrameErrorCode = "incompatible-schema" if type(error).__name__ == "SchemaResolutionError" else "bad-body"
        raise FrameDecodeError(
            code, f"{what} cannot be read as v{reader.version}: {error}", writer.fingerprint
        ) from error
    if stream.tell() != len(body):
        raise FrameDecodeError("trailing-bytes", f"{what} has bytes left after the record", writer.fingerprint)
    if not isinstance(record, dict):  # every SPA schema is an Avro record
        raise FrameDecodeError("bad-body", f"{what} is not a record", writer.fingerprint)
    return record


def encode_with(version: SchemaVersion, record: Mapping[str, Any]) -> bytes:
    """A frame of ``record`` under one specific schema version (tests use history versions)."""
    try:
        validate(record, version.schema, raise_errors=True, strict=True)
    except Exception as error:  # fastavro's ValidationError lists the bad field paths
        raise RecordEncodeError(f"cannot encode {version.full_name}: {error}") from error
    out = io.BytesIO()
    schemaless_writer(out, version.schema, dict(record))
    return frame_single_object(version.fingerprint, out.getvalue())


def decode_value(name: str, value: bytes) -> Record:
    """Record ``name`` from an Avro single-object frame (any known version) or a JSON object;
    ``RecordRejected`` with the reason otherwise (a value neither frame nor ``{…}`` is ``bad-magic``,
    as the TS decoder files a value without a frame header)."""
    if value.startswith(SINGLE_OBJECT_MAGIC):
        try:
            return spa_schemas().decode(name, value)
        except FrameDecodeError as err:
            raise RecordRejected(err.code, str(err)) from err
    if value.lstrip()[:1] != b"{":
        raise RecordRejected(
            "bad-magic",
            f"neither an Avro single-object frame (c3 01) nor a JSON object: starts with {value[:4].hex(' ') or 'nothing'}",
        )
    try:
        return json.loads(value)  # starts with `{`: an object once it parses
    except (UnicodeDecodeError, ValueError) as err:
        raise RecordRejected("bad-json", f"value starts like JSON but does not parse: {err}") from err


@lru_cache(maxsize=1)
def spa_schemas() -> SchemaRegistry:
    """The registry of the repository's schemas, loaded once per process."""
    return SchemaRegistry(load_schema_versions(SCHEMA_DIR))
