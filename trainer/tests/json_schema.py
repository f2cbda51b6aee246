"""A validator for the JSON Schema keywords the files under ../schemas use (type, properties,
required, additionalProperties, minimum, pattern). Hand-written: the `jsonschema` package is not
installable here (no PyPI; trainer/README.md, Setup)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
TRAINER_FILES: dict[str, Any] = json.loads((SCHEMAS / "trainer-files.json").read_text("utf-8"))["$defs"]
"""The files the trainer leaves for `spa run`, by name (`sft-metrics`, `ppo-progress`)."""

TYPES: dict[str, Any] = {"object": dict, "string": str, "boolean": bool, "null": type(None), "array": list}


def _is(value: object, kind: str) -> bool:
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return kind == "number" or float(value).is_integer()
    return isinstance(value, TYPES[kind])


def problems(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Where `value` breaks `schema`, one line per problem; empty when it is valid."""
    kinds = [schema["type"]] if isinstance(schema.get("type"), str) else schema.get("type", [])
    if kinds and not any(_is(value, k) for k in kinds):
        return [f"{where}: {value!r:.60} is not {' or '.join(kinds)}"]
    found: list[str] = []
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        found.append(f"{where}: {value} < {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{where}: {value!r:.60} does not match {schema['pattern']}")
    if isinstance(value, dict):
        found += [f"{where}: no {key}" for key in schema.get("required", []) if key not in value]
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key, schema.get("additionalProperties", True))
            if sub is False:
                found.append(f"{where}: {key} is not allowed")
            elif isinstance(sub, dict):
                found += problems(item, sub, f"{where}.{key}")
    return found
