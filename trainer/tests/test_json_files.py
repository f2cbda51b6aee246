"""Strict JSON: what the trainers write parses in any JSON reader (no NaN/Infinity)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from spa_trainer.json_files import dumps, finite, write_json


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_floats_become_null_at_any_depth() -> None:
    value = {"loss": math.nan, "ppl": [1.5, math.inf, -math.inf], "nested": {"x": (math.nan, 2)}, "n": 3}
    assert finite(value) == {"loss": None, "ppl": [1.5, None, None], "nested": {"x": [None, 2]}, "n": 3}
    assert _strict(dumps(value)) == finite(value)


def test_python_json_would_write_bare_nan() -> None:
    # the reason for the helper: the standard library writes a token no JSON parser accepts
    with pytest.raises(ValueError):
        _strict(json.dumps({"loss": math.nan}))


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_json(path, {"val_loss": math.nan, "step": 1})
    write_json(path, {"val_loss": 0.5, "step": 2})
    assert _strict(path.read_text()) == {"val_loss": 0.5, "step": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]
