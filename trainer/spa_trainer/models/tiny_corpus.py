"""Deterministic environment text for training the `tiny` tokenizer.

Built from the paper's puzzles (`envs/puzzles/*.jsonl`, docs/spa-envs.md), SPA's instruction and
format strings (docs/spa-prompts.md) and synthetic coordinate sentences (docs/spa-prompts.md#states), so the tiny
BPE vocabulary covers exactly what SPA prompts and responses contain. Same files in, same
lines out: nothing here reads a clock or an unseeded RNG. The same pieces make `sokoban_sft_rows`,
the small SftRow set of the trainer's tests and `npm run gpu-check`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from . import spa_text

SOKOBAN_ACTIONS = ("Up", "Down", "Left", "Right")
FROZENLAKE_ACTIONS = ("Left", "Down", "Right", "Up")


def repo_root() -> Path:
    """The repository root (this file lives in `trainer/spa_trainer/models/`)."""
    return Path(__file__).resolve().parents[3]


def _cells(grid: str, symbols: str) -> list[tuple[int, int]]:
    return [(r, c) for r, line in enumerate(grid.split("\n")) for c, ch in enumerate(line) if ch in symbols]


def _coords(cells: list[tuple[int, int]]) -> str:
    return ", ".join(f"({r},{c})" for r, c in cells)


def sokoban_sentence(grid: str) -> str:
    """The Sokoban coordinate sentence (docs/spa-prompts.md#states), computed from the grid (player P/S,
    boxes X/√, targets O/√/S)."""
    player = _cells(grid, "PS")
    boxes = _cells(grid, "X√")
    targets = _cells(grid, "O√S")
    parts = [f"Player (P) is at {_coords(player)}"]
    parts.append(f"box (X) is at {_coords(boxes)}")
    parts.append(f"target (O) is at {_coords(targets)}")
    return "; ".join(parts) + "."


def sudoku_sentence(board: str) -> str:
    """The Sudoku coordinate line (docs/spa-prompts.md#states): 1-indexed empty cells of a `| a b c d | …` board."""
    rows = [row.split() for row in board.strip().strip("|").split("|")]
    empty = [(r + 1, c + 1) for r, row in enumerate(rows) for c, v in enumerate(row) if v == "."]
    return "Empty positions to be filled are at " + ", ".join(f"({r},{c})" for r, c in empty) + "."


def _prefix(instruction: str, vocab: str | None, actions: tuple[str, ...] | None) -> str:
    # prefix assembly (docs/spa-prompts.md#prefix)
    text = instruction
    if vocab:
        text += "\nThe meaning of each symbol in the state is:\n" + vocab
    if actions:
        text += "\nYour available actions are:\n" + ", ".join(actions)
        text += '\nYou can make up to 10 actions, separated by the action separator " || "\n'
    return text


def _turn(index: int, state: str, actions_left: int, fmt: str) -> str:
    # user turn (docs/spa-prompts.md#conversation)
    return (
        f"\nTurn {index}:\nState:\n{state}\nYou have {actions_left} actions left. "
        f"Always output: {fmt} with no extra text. Strictly follow this format. "
        "Max response length: 100 words (tokens).\n"
    )


def _response(state: str, thought: str, nxt: str, answer: str) -> str:
    return (
        f"<think> <observation>{state}</observation> {thought} "
        f"<prediction>{nxt}</prediction></think><answer>{answer}</answer>"
    )


def _puzzle_rows(name: str) -> list[dict[str, object]]:
    path = repo_root() / "envs" / "puzzles" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _grid_states() -> Iterator[tuple[str, str]]:
    """(env, state text) for every stored puzzle, in file order."""
    for row in _puzzle_rows("sokoban-6x6-1box.jsonl"):
        grid = str(row["render"])
        yield "sokoban", grid + "\n" + sokoban_sentence(grid)
    for row in _puzzle_rows("frozenlake-4x4.jsonl"):
        yield "frozenlake", str(row["render"])
    for row in _puzzle_rows("sudoku-4x4.jsonl"):
        for key in ("puzzle", "solution"):
            board = str(row[key])
            yield "sudoku", board + "\n" + sudoku_sentence(board)


def _synthetic_sentences() -> Iterator[str]:
    """Coordinate sentences over all 6×6 positions (docs/spa-prompts.md#states), in a fixed order."""
    for r in range(6):
        for c in range(6):
            b, t = (5 - r, c), (r, 5 - c)
            yield f"Player (P) is at ({r},{c}); box (X) is at ({b[0]},{b[1]}); target (O) is at ({t[0]},{t[1]})."


def corpus_lines(max_puzzles_per_env: int = 400) -> list[str]:
    """The tokenizer training corpus: SPA prompts, responses, states and reward lines."""
    lines: list[str] = [spa_text.SYSTEM_MESSAGE, spa_text.FORMAT_PROMPT_WM, spa_text.FORMAT_PROMPT_BASE]
    lines.append(_prefix(spa_text.SOKOBAN_WM, spa_text.SOKOBAN_VOCAB, SOKOBAN_ACTIONS))
    lines.append(_prefix(spa_text.SOKOBAN_BASE, spa_text.SOKOBAN_VOCAB, SOKOBAN_ACTIONS))
    lines.append(_prefix(spa_text.FROZENLAKE_WM, spa_text.FROZENLAKE_VOCAB, FROZENLAKE_ACTIONS))
    lines.append(_prefix(spa_text.FROZENLAKE_BASE, spa_text.FROZENLAKE_VOCAB, FROZENLAKE_ACTIONS))
    lines.extend([spa_text.SUDOKU_WM, spa_text.SUDOKU_BASE])
    counts: dict[str, int] = {}
    states = list(_grid_states())
    for i, (env, state) in enumerate(states):
        counts[env] = counts.get(env, 0) + 1
        if counts[env] > max_puzzles_per_env:
            continue
        nxt = states[(i + 1) % len(states)][1]
        actions = SOKOBAN_ACTIONS if env == "sokoban" else FROZENLAKE_ACTIONS
        answer = "1,1,2 || 2,3,4" if env == "sudoku" else f"{actions[i % 4]} || {actions[(i + 1) % 4]}"
        lines.append(_turn(1 + i % 5, state, 10 - i % 10, spa_text.FORMAT_PROMPT_WM))
        lines.append(_response(state, "I move the player next to the box and push it.", nxt, answer))
        lines.append(f"Reward:\n{[-0.1, -0.2, -0.30000000000000004, 10.9, 0, 0.0, 1.0][i % 7]}\n")
    lines.extend(_synthetic_sentences())
    return lines


def sokoban_sft_rows(count: int) -> list[dict[str, object]]:
    """One single-turn world-model SftRow (as a dict) per stored Sokoban puzzle, the first `count`;
    the ground-truth prediction repeats the state (a blocked move)."""
    prefix = _prefix(spa_text.SOKOBAN_WM, spa_text.SOKOBAN_VOCAB, SOKOBAN_ACTIONS)
    rows: list[dict[str, object]] = []
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
                "response": _response(state, "The wall blocks me.", state, "Up"),
                "ability": "bfs",
                "reward_model": "{}",
                "extra_info": "{}",
            }
        )
    return rows
