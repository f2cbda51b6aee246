"""Small deterministic SftRow sets built from the paper's Sokoban puzzles (test data)."""

from __future__ import annotations

import json
from pathlib import Path

from spa_trainer.models.tiny_corpus import sokoban_sft_rows as sokoban_rows

__all__ = ["sokoban_rows", "write_jsonl"]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    """Write rows as JSON lines (the TS side's SftRow file format)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
