"""Small deterministic SftRow sets built from the paper's Sokoban puzzles (test data)."""

from __future__ import annotations

import json
from pathlib import Path

from spa_trainer.models import spa_text
from spa_trainer.models.tiny_corpus import SOKOBAN_ACTIONS, _prefix, _puzzle_rows, _turn, sokoban_sentence


def sokoban_rows(count: int) -> list[dict[str, object]]:
    """One single-turn row per puzzle; the GT prediction repeats the state (a blocked move)."""
    prefix = _prefix(spa_text.SOKOBAN_WM, spa_text.SOKOBAN_VOCAB, SOKOBAN_ACTIONS)
    rows = []
    for puzzle in _puzzle_rows("sokoban-6x6-1box.jsonl")[:count]:
        grid = str(puzzle["render"])
        state = grid + "\n" + sokoban_sentence(grid)
        rows.append(
            {
                "trajectory_id": f"sokoban-{puzzle['seed']}-0",
                "turn": 1,
                "data_source": "sokoban",
                "prompt": [
                    {"role": "system", "content": spa_text.SYSTEM_MESSAGE},
                    {"role": "user", "content": prefix + _turn(1, state, 10, spa_text.FORMAT_PROMPT_WM)},
                ],
                "response": (
                    f"<think> <observation>{state}</observation> The wall blocks me. "
                    f"<prediction>{state}</prediction></think><answer>Up</answer>"
                ),
                "ability": "bfs",
                "reward_model": "{}",
                "extra_info": "{}",
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    """Write rows as JSON lines (the TS side's SftRow file format)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
