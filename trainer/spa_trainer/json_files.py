"""Strict JSON for everything the trainers write: non-finite floats become null, files land whole.

Python's `json.dumps` writes `NaN` and `Infinity` by default, which no JSON parser accepts (the
TypeScript side reads these files with `JSON.parse`). A metric without data (no held-out rows, no
prediction span) is therefore written as `null`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every non-finite float (NaN, ±inf) replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """`json.dumps` of `finite(value)` that refuses anything non-finite left over."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def write_json(path: Path, value: Any) -> None:
    """Write `value` as indented strict JSON atomically (temp file + rename): a reader sees the old
    file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
