#!/usr/bin/env python3
"""Held-out env transitions for `spa env step`, computed by an independent Python statement of SPA's
reference semantics (docs/spa-envs.md, docs/spa-prompts.md#states; docs/spa-testvectors.md):

- Sokoban: gym_sokoban's push-or-move, `_calc_reward` and `_check_if_done` (docs/spa-envs.md#sokoban) on
  numpy arrays, with RAGEN's info (`success = boxes_on_target == num_boxes`, effective = player moved).
- FrozenLake: the real `gymnasium.envs.toy_text.frozen_lake.FrozenLakeEnv(desc=..., is_slippery=False)`.
- Sudoku 4x4: RAGEN's SudokuEnv rules as docs/spa-envs.md#sudoku states them (parse, validity, overwrite,
  cap 30).

Conventions shared with `spa env step` (cli/commands/env-step.ts), documented there and in the report:
- unknown action strings are dropped before stepping (docs/spa-envs.md#manager); execution stops at the
  first done;
- a loaded state has counters at 0; Sokoban counts boxes already on targets, so pushing one off costs -1
  (docs/spa-testvectors.md#sokoban); a state that is already terminal is still stepped, as gym would;
- descriptions: Sokoban / FrozenLake use the documented coordinate sentences of envs/README.md (our
  choices for S/√ and for FrozenLake, docs/spa-prompts.md#states), Sudoku the RAGEN sentence.

Writes test/fixtures/env-transitions/{sokoban,frozenlake,sudoku}.jsonl, one
{"case","input","expected"} object per line. Needs gymnasium + numpy:
  python3 -m venv /tmp/envx && /tmp/envx/bin/pip install gymnasium numpy
  /tmp/envx/bin/python scripts/gen-env-transitions.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake

ROOT = Path(__file__).resolve().parent.parent
PUZZLES = ROOT / "envs" / "puzzles"
OUT = ROOT / "test" / "fixtures" / "env-transitions"
RNG = random.Random(20251015)


def lookup(names: list[str], text: str) -> int | None:
    """SPA's action lookup: case-insensitive match of the whole string, ids from 1
    (docs/spa-envs.md#manager)."""
    for i, name in enumerate(names):
        if name.lower() == text.lower():
            return i + 1
    return None


def split_known(names: list[str], actions: list[str]) -> tuple[list[int], list[str]]:
    ids, dropped = [], []
    for text in actions:
        action_id = lookup(names, text)
        if action_id is None:
            dropped.append(text)
        else:
            ids.append(action_id)
    return ids, dropped


# --------------------------------------------------------------------------------------------
# Sokoban (gym_sokoban semantics, docs/spa-envs.md#sokoban)
# --------------------------------------------------------------------------------------------
SOKOBAN_ACTIONS = ["Up", "Down", "Left", "Right"]
CHANGE = [(-1, 0), (1, 0), (0, -1), (0, 1)]  # gym_sokoban CHANGE_COORDINATES
CHARS = {"#": (0, 0), "_": (1, 1), "O": (2, 2), "√": (2, 3), "X": (1, 4), "P": (1, 5), "S": (2, 5)}
GRID = ["#", "_", "O", "√", "X", "P", "S"]
MAX_STEPS = 100


class Sokoban:
    def __init__(self, render: str):
        rows = render.split("\n")
        self.fixed = np.array([[CHARS[ch][0] for ch in row] for row in rows], dtype=np.uint8)
        self.state = np.array([[CHARS[ch][1] for ch in row] for row in rows], dtype=np.uint8)
        self.player = np.argwhere(self.state == 5)[0]
        self.num_boxes = int(np.sum((self.state == 3) | (self.state == 4)))
        self.boxes_on_target = int(np.sum(self.state == 3))  # as in docs/spa-testvectors.md#sokoban
        self.num_env_steps = 0

    def _move(self, change) -> bool:
        new = self.player + change
        if self.state[new[0], new[1]] in (1, 2):
            self.state[new[0], new[1]] = 5
            self.state[self.player[0], self.player[1]] = self.fixed[self.player[0], self.player[1]]
            self.player = new
            return True
        return False

    def _push(self, change) -> bool:
        new = self.player + change
        beyond = new + change
        if beyond[0] >= self.state.shape[0] or beyond[1] >= self.state.shape[1]:
            return False
        if self.state[new[0], new[1]] in (3, 4) and self.state[beyond[0], beyond[1]] in (1, 2):
            self.state[beyond[0], beyond[1]] = 3 if self.fixed[beyond[0], beyond[1]] == 2 else 4
            self.state[new[0], new[1]] = 5
            self.state[self.player[0], self.player[1]] = self.fixed[self.player[0], self.player[1]]
            self.player = new
            return True
        return self._move(change)

    def _all_on_target(self) -> bool:
        uncovered = (self.state == 2) | ((self.fixed == 2) & (self.state == 5))
        return int(np.sum(uncovered)) == 0

    def step(self, action_id: int) -> tuple[float, bool, bool]:
        self.num_env_steps += 1
        self._push(np.array(CHANGE[action_id - 1]))
        reward = -0.1
        uncovered = (self.state == 2) | ((self.fixed == 2) & (self.state == 5))
        on_target = self.num_boxes - int(np.sum(uncovered))
        if on_target > self.boxes_on_target:
            reward += 1
        elif on_target < self.boxes_on_target:
            reward += -1
        won = self._all_on_target()
        if won:
            reward += 10
        self.boxes_on_target = on_target
        done = won or self.num_env_steps == MAX_STEPS
        return reward, done, self.boxes_on_target == self.num_boxes

    def render(self) -> str:
        shown = np.where((self.state == 5) & (self.fixed == 2), 6, self.state)
        return "\n".join("".join(GRID[v] for v in row) for row in shown)

    def describe(self) -> str:
        def cells(mask) -> list[str]:
            return [f"({r},{c})" for r, c in np.argwhere(mask)]

        clauses = [f"Player (P) is at {p}" for p in cells(self.state == 5)]
        clauses += [f"box (X) is at {b}" for b in cells((self.state == 3) | (self.state == 4))]
        clauses += [f"target (O) is at {t}" for t in cells(self.fixed == 2)]
        return "; ".join(clauses) + "."


def run_sokoban(render: str, actions: list[str]) -> dict:
    env = Sokoban(render)
    ids, dropped = split_known(SOKOBAN_ACTIONS, actions)
    renders, rewards = [], []
    done = env._all_on_target()
    success = done
    for action_id in ids:
        reward, done, success = env.step(action_id)
        renders.append(env.render())
        rewards.append(reward)
        if done:
            break
    return dict(renders=renders, rewards=rewards, done=done, success=success,
                description=env.describe(), dropped=dropped)


# --------------------------------------------------------------------------------------------
# FrozenLake (the real gymnasium class, deterministic moves)
# --------------------------------------------------------------------------------------------
LAKE_ACTIONS = ["Left", "Down", "Right", "Up"]  # RAGEN ids 1..4 -> gymnasium 0..3
LAKE_TILE = {"_": "F", "O": "H", "G": "G", "P": "F", "X": "H", "√": "G"}


def lake_from_render(render: str) -> tuple[GymFrozenLake, list[str]]:
    rows = render.split("\n")
    desc = [[LAKE_TILE[ch] for ch in row] for row in rows]
    player = next((r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch in "PX√")
    # gymnasium needs an S to reset; the player's cell if it is floor, else any floor (then moved).
    start = player if desc[player[0]][player[1]] == "F" else next(
        (r, c) for r, row in enumerate(desc) for c, t in enumerate(row) if t == "F")
    desc[start[0]][start[1]] = "S"
    env = GymFrozenLake(desc=["".join(row) for row in desc], is_slippery=False)
    env.reset(seed=0)
    env.s = player[0] * env.ncol + player[1]
    return env, ["".join(row) for row in desc]


def lake_render(env: GymFrozenLake) -> str:
    row_p, col_p = divmod(int(env.s), env.ncol)
    lines = []
    for r in range(env.nrow):
        line = ""
        for c in range(env.ncol):
            tile = env.desc[r, c].decode()
            if (r, c) == (row_p, col_p):
                line += {"H": "X", "G": "√"}.get(tile, "P")
            else:
                line += {"H": "O", "G": "G"}.get(tile, "_")
        lines.append(line)
    return "\n".join(lines)


def lake_describe(env: GymFrozenLake) -> str:
    row_p, col_p = divmod(int(env.s), env.ncol)
    clauses = [f"Player (P) is at ({row_p},{col_p})"]
    clauses += [f"hole (O) is at ({r},{c})" for r, c in np.argwhere(env.desc == b"H")]
    clauses += [f"goal (G) is at ({r},{c})" for r, c in np.argwhere(env.desc == b"G")]
    return "; ".join(clauses) + "."


def run_frozenlake(render: str, actions: list[str]) -> dict:
    env, _ = lake_from_render(render)
    ids, dropped = split_known(LAKE_ACTIONS, actions)
    here = lambda: env.desc.flat[int(env.s)].decode()  # noqa: E731
    renders, rewards = [], []
    done, success = here() in "HG", here() == "G"
    for action_id in ids:
        _, reward, terminated, _, _ = env.step(action_id - 1)
        renders.append(lake_render(env))
        rewards.append(reward)
        done, success = bool(terminated), here() == "G"
        if done:
            break
    return dict(renders=renders, rewards=rewards, done=done, success=success,
                description=lake_describe(env), dropped=dropped)


# --------------------------------------------------------------------------------------------
# Sudoku (docs/spa-envs.md#sudoku)
# --------------------------------------------------------------------------------------------
SUDOKU_MAX_STEPS = 30


def parse_board(text: str) -> np.ndarray:
    rows = [row.split() for row in text.split("|") if row.strip()]
    return np.array([[0 if v == "." else int(v) for v in row] for row in rows], dtype=int)


def render_board(board: np.ndarray) -> str:
    return "".join("| " + "".join(("." if v == 0 else str(v)) + " " for v in row) for row in board)


def describe_board(board: np.ndarray) -> str:
    empty = [f"({r + 1},{c + 1})" for r, c in np.argwhere(board == 0)]
    if not empty:
        return "No empty positions found (board might be complete)."
    if len(empty) == 1:
        return f"Empty position to be filled is at {empty[0]}."
    return f"Empty positions to be filled are at {', '.join(empty)}."


def parse_move(action: str):
    """(row, col, value) 0-indexed row/col, or None; the forms of docs/spa-envs.md#sudoku: "r,c,v", "r c v",
    "... row R col C"."""
    text = action.lower().strip()
    tokens = text.replace(",", " ").split()
    if "row" in text and "col" in text:
        if "row" not in tokens or "col" not in tokens:
            return None
        at_row, at_col = tokens.index("row") + 1, tokens.index("col") + 1
        values = [int(t) for i, t in enumerate(tokens) if t.isdigit() and i not in (at_row, at_col)]
        try:
            row, col = int(tokens[at_row]) - 1, int(tokens[at_col]) - 1
        except (IndexError, ValueError):
            return None
        return (row, col, values[0]) if values else None
    if len(tokens) < 3 or not all(t.lstrip("-").isdigit() for t in tokens[:3]):
        return None
    try:
        return int(tokens[0]) - 1, int(tokens[1]) - 1, int(tokens[2])
    except ValueError:
        return None


def board_solved(board: np.ndarray) -> bool:
    need = set(range(1, 5))
    groups = [board[i, :] for i in range(4)] + [board[:, j] for j in range(4)]
    groups += [board[r:r + 2, c:c + 2].ravel() for r in (0, 2) for c in (0, 2)]
    return all(set(g.tolist()) == need for g in groups)


def run_sudoku(render: str, puzzle: str | None, actions: list[str]) -> dict:
    clues = parse_board(puzzle if puzzle is not None else render)
    board = parse_board(render)
    renders, rewards, valid, effective = [], [], [], []
    done = success = board_solved(board)
    for steps, action in enumerate(actions, start=1):  # no lookup: every string is stepped
        move = parse_move(action)
        ok = move is not None and 0 <= move[0] < 4 and 0 <= move[1] < 4 and 1 <= move[2] <= 4 \
            and clues[move[0], move[1]] == 0
        placed = False
        if ok:
            r, c, v = move
            box = board[r // 2 * 2:r // 2 * 2 + 2, c // 2 * 2:c // 2 * 2 + 2]
            if v not in board[r, :] and v not in board[:, c] and v not in box:
                board[r, c] = v
                placed = True
        success = placed and board_solved(board)
        done = success or steps >= SUDOKU_MAX_STEPS
        renders.append(render_board(board))
        rewards.append(1.0 if success else 0.0)
        valid.append(bool(ok))
        effective.append(placed)
        if done:
            break
    return dict(renders=renders, rewards=rewards, done=done, success=success,
                description=describe_board(board), dropped=[], valid=valid, effective=effective)


# --------------------------------------------------------------------------------------------
# Case generation
# --------------------------------------------------------------------------------------------
def load_puzzles(name: str) -> list[dict]:
    with open(PUZZLES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def spell(names: list[str], action_id: int) -> str:
    """An action string as a model might write it: usually canonical, sometimes another case."""
    name = names[action_id - 1]
    return RNG.choice([name, name, name, name.lower(), name.upper()])


UNKNOWN = ["Jump", "up ", " Left", "", "Stay", "U", "Up.", "move up", "Nothing"]


def noisy_walk(names: list[str], length: int, p_unknown: float = 0.1) -> list[str]:
    out = []
    for _ in range(length):
        if RNG.random() < p_unknown:
            out.append(RNG.choice(UNKNOWN))
        else:
            out.append(spell(names, RNG.randint(1, 4)))
    return out


def with_description(render: str, description: str) -> str:
    """Half the time give the `text_with_coordinates` state instead of the bare render."""
    return f"{render}\n{description}" if RNG.random() < 0.5 else render


def sokoban_bfs(render: str, limit: int = 200_000) -> list[str] | None:
    """Shortest action list solving a room (breadth-first over player + boxes), for solving walks."""
    start = Sokoban(render)
    rows, cols = start.state.shape
    walls = start.fixed == 0
    targets = {tuple(t) for t in np.argwhere(start.fixed == 2)}
    key0 = (tuple(start.player), frozenset(tuple(b) for b in np.argwhere(np.isin(start.state, (3, 4)))))
    parents = {key0: None}
    frontier = [key0]
    while frontier and len(parents) < limit:
        nxt = []
        for key in frontier:
            (pr, pc), boxes = key
            for a, (dr, dc) in enumerate(CHANGE):
                r, c = pr + dr, pc + dc
                if walls[r, c]:
                    continue
                new_boxes = boxes
                if (r, c) in boxes:
                    br, bc = r + dr, c + dc
                    if walls[br, bc] or (br, bc) in boxes:
                        continue
                    new_boxes = (boxes - {(r, c)}) | {(br, bc)}
                new_key = ((r, c), new_boxes)
                if new_key in parents:
                    continue
                parents[new_key] = (key, a)
                if new_boxes <= targets:
                    path = []
                    while parents[new_key] is not None:
                        new_key, a2 = parents[new_key]
                        path.append(SOKOBAN_ACTIONS[a2])
                    return path[::-1]
                nxt.append(new_key)
        frontier = nxt
    return None


HAND_ROOMS = {
    "two boxes, one on a target": "#######\n#_____#\n#_√_X_#\n#__P__#\n#___O_#\n#_____#\n#######",
    "player on a target, two boxes": "######\n#_O__#\n#_XS_#\n#_X__#\n#____#\n######",
    "box against box": "######\n#____#\n#PXX_#\n#__OO#\n#____#\n######",
    "three boxes, two on targets": "#######\n#_√___#\n#_√_XO#\n#__P__#\n#######",
    "box on target in a corridor": "#######\n#P√_O_#\n#__X__#\n#_____#\n#######",
}

# docs/spa-testvectors.md#sokoban (start render, actions)
SOKOBAN_VECTORS = [
    ("testcases 2.1 move", "######\n#___O#\n#__X_#\n###P_#\n###__#\n######", ["Right"]),
    ("testcases 2.2 push up", "######\n#___O#\n#__X_#\n###P_#\n###__#\n######", ["Up"]),
    ("testcases 2.3 wall", "######\n#___O#\n#__X_#\n###P_#\n###__#\n######", ["Left"]),
    ("testcases 2.4 push into wall", "######\n#__X_#\n#__P_#\n#____#\n#O___#\n######", ["Up"]),
    ("testcases 2.5 solve", "######\n#____#\n#_PXO#\n#____#\n#____#\n######", ["Right"]),
    ("testcases 2.6 onto and off a target", "######\n#____#\n#_PO_#\n#__X_#\n#____#\n######",
     ["Right", "Right"]),
    ("testcases 2.7 push off target", "######\n#____#\n#P√__#\n#____#\n#____#\n######", ["Right"]),
    ("testcases 2.8 multi-action turn", "######\n#_####\n#_P###\n#_X#_#\n#__O_#\n######",
     ["Down", "Left", "Down"]),
    ("testcases 8 unknown dropped", "######\n#O####\n#__###\n#X_###\n#_P_##\n######", ["Up", "Jump", "Left"]),
    ("testcases 8 stop at done", "######\n#____#\n#_PXO#\n#____#\n#____#\n######", ["Right", "Down"]),
]


def sokoban_cases() -> list[dict]:
    cases = []

    def add(name: str, render: str, actions: list[str], state_text: str | None = None):
        cases.append(dict(case=name, input=dict(env="sokoban", render=state_text or render, actions=actions),
                          expected=run_sokoban(render, actions)))

    for name, render, actions in SOKOBAN_VECTORS:
        add(name, render, actions)
    add("no actions: description of the given state", SOKOBAN_VECTORS[0][1], [])
    add("solved board, no actions", "######\n#____#\n#__P√#\n#____#\n#____#\n######", [])
    add("solved board stepped away: still solved (+10 again)", "######\n#____#\n#__P√#\n#____#\n#____#\n######",
        ["Left"])
    add("only unknown actions", SOKOBAN_VECTORS[0][1], ["Jump", "up "])
    add("max_steps: done at step 100", "######\n#O####\n#__###\n#X_###\n#_P_##\n######", ["Down"] * 105)
    for name, render in HAND_ROOMS.items():
        add(f"{name}: solution", render, sokoban_bfs(render) + ["Up"])
        for i in range(10):
            add(f"{name}: walk {i}", render, noisy_walk(SOKOBAN_ACTIONS, RNG.randint(3, 25)))
    puzzles = load_puzzles("sokoban-6x6-1box.jsonl")
    for puzzle in RNG.sample(puzzles, 100):
        render = puzzle["render"]
        env = Sokoban(render)
        for _ in range(RNG.randint(0, 6)):  # start some cases mid-episode
            env.step(RNG.randint(1, 4))
            if env._all_on_target():
                break
        start = env.render()
        add(f"seed {puzzle['seed']}: walk", start, noisy_walk(SOKOBAN_ACTIONS, RNG.randint(1, 12)),
            with_description(start, env.describe()))
    for puzzle in RNG.sample(puzzles, 30):
        solution = sokoban_bfs(puzzle["render"]) or []
        add(f"seed {puzzle['seed']}: shortest solution then more", puzzle["render"],
            [spell(SOKOBAN_ACTIONS, SOKOBAN_ACTIONS.index(a) + 1) for a in solution] + ["Down", "Up"])
    return cases


LAKE_VECTORS = [  # docs/spa-testvectors.md#frozenlake on SHFF/FFFH/FHFF/HFFG, as (player, action)
    ((0, 0), "Left"), ((0, 0), "Down"), ((0, 0), "Right"), ((2, 2), "Right"), ((2, 3), "Down"),
    ((1, 2), "Right"),
]
LAKE_MAP = ["_O__", "___O", "_O__", "O__G"]


def lake_render_at(rows: list[str], player: tuple[int, int]) -> str:
    out = []
    for r, row in enumerate(rows):
        chars = list(row)
        if r == player[0]:
            chars[player[1]] = {"O": "X", "G": "√"}.get(chars[player[1]], "P")
        out.append("".join(chars))
    return "\n".join(out)


def frozenlake_cases() -> list[dict]:
    cases = []

    def add(name: str, render: str, actions: list[str], extra: dict | None = None,
            state_text: str | None = None):
        inp = dict(env="frozenlake", render=state_text or render, actions=actions, slippery=False)
        inp.update(extra or {})
        cases.append(dict(case=name, input=inp, expected=run_frozenlake(render, actions)))

    for player, action in LAKE_VECTORS:
        add(f"testcases 3.1 {player} {action}", lake_render_at(LAKE_MAP, player), [action])
    add("start in a hole: stays, done", lake_render_at(LAKE_MAP, (0, 1)), ["Down", "Down"])
    add("start on the goal: stays, done", lake_render_at(LAKE_MAP, (3, 3)), ["Up"])
    add("start on the goal, no actions", lake_render_at(LAKE_MAP, (3, 3)), [])
    add("no actions", lake_render_at(LAKE_MAP, (2, 0)), [])
    add("only unknown actions", lake_render_at(LAKE_MAP, (2, 0)), ["Jump", ""])
    add("6x6 map walk to the goal", lake_render_at(["______", "_OO___", "___O__", "_O____", "___O__", "_____G"],
                                                   (0, 0)),
        ["Right"] * 5 + ["Down"] * 5 + ["Left"])
    puzzles = load_puzzles("frozenlake-4x4.jsonl")
    for puzzle in RNG.sample(puzzles, 110):
        env, _ = lake_from_render(puzzle["render"])
        for _ in range(RNG.randint(0, 4)):  # start some cases mid-episode (stop before terminal)
            before = int(env.s)
            env.step(RNG.randint(0, 3))
            if env.desc.flat[int(env.s)] in (b"H", b"G"):
                env.s = before
                break
        start = lake_render(env)
        extra = {"seed": RNG.randint(0, 10**6)} if RNG.random() < 0.3 else None
        add(f"seed {puzzle['seed']}: walk", start, noisy_walk(LAKE_ACTIONS, RNG.randint(1, 10)), extra,
            with_description(start, lake_describe(env)))
    return cases


def sudoku_action(board: np.ndarray, clues: np.ndarray, solution: np.ndarray) -> str:
    """A move of a random kind: right, wrong, overwrite, clue, out of range, other spellings, junk."""
    r, c = RNG.randrange(4), RNG.randrange(4)
    empties = [tuple(p) for p in np.argwhere(board == 0)]
    filled = [tuple(p) for p in np.argwhere((board != 0) & (clues == 0))]
    clue_cells = [tuple(p) for p in np.argwhere(clues != 0)]
    kind = RNG.choice(["right", "right", "right", "random", "random", "overwrite", "overwrite", "clue",
                       "range", "text", "spaces", "junk"])
    if kind == "right" and empties:
        r, c = RNG.choice(empties)
        return f"{r + 1},{c + 1},{solution[r, c]}"
    if kind == "overwrite" and filled:
        r, c = RNG.choice(filled)
        return f"{r + 1},{c + 1},{RNG.randint(1, 4)}"
    if kind == "clue":
        r, c = RNG.choice(clue_cells)
        return f"{r + 1},{c + 1},{RNG.randint(1, 4)}"
    if kind == "range":
        return RNG.choice(["5,1,1", "0,2,3", "1,1,5", "1,1,0", "-1,2,3", "2,-3,1", "1,9,2", "--1,1,1"])
    if kind == "text":
        v = RNG.randint(1, 4)
        return RNG.choice([f"place {v} at row {r + 1} col {c + 1}", f"row {r + 1} col {c + 1} value {v}",
                           f"Put {v} in Row {r + 1}, Col {c + 1}", f"row {r + 1} col {c + 1}",
                           f"place {v} at row +{r + 1} col {c + 1}", f"row{r + 1} col{c + 1} {v}"])
    if kind == "spaces":
        return RNG.choice([f"{r + 1} {c + 1} {RNG.randint(1, 4)}", f" {r + 1} , {c + 1} , {RNG.randint(1, 4)} ",
                           f"{r + 1},{c + 1},{RNG.randint(1, 4)},extra"])
    if kind == "junk":
        return RNG.choice(["r1c1=2", "", "Up", "1,2", "1,1,x", "+2,1,3", "2.1.3", "1, 1"])
    return f"{r + 1},{c + 1},{RNG.randint(1, 4)}"


def sudoku_cases() -> list[dict]:
    cases = []

    def add(name: str, render: str, actions: list[str], puzzle: str | None, state_text: str | None = None):
        inp = dict(env="sudoku", render=state_text or render, actions=actions)
        if puzzle is not None:
            inp["puzzle"] = puzzle
        cases.append(dict(case=name, input=inp, expected=run_sudoku(render, puzzle, actions)))

    seed123 = "| 3 2 4 1 | . 4 . . | 2 . 3 . | 4 3 . 2 "
    vector = ["1,1,1", "2,1,1", "place 3 at row 2 col 1", "5,1,1", "r1c1=2", "2 1 2"]
    add("testcases 5 sequence", seed123, vector, None)
    add("testcases 5 then solve", seed123, vector + ["2,3,2", "2,4,3", "3,2,1", "3,4,4", "4,3,1", "1,1,1"], None)
    add("fallback string stepped char by char (testcases 8)", seed123, list("2,1,1 || 2,3,2"), None)
    add("step cap: stops at 30", seed123, ["1,1,1"] * 35, None)
    solved = "| 3 2 4 1 | 1 4 2 3 | 2 1 3 4 | 4 3 1 2 "
    add("solved board, no actions", solved, [], seed123)
    add("solved board: overwrites are not effective", solved, ["2,1,2", "2,3,2", "4,3,4"], seed123)
    add("overwrite a filled cell with a consistent value", "| 3 2 4 1 | 1 4 . . | 2 . 3 . | 4 3 . 2 ",
        ["2,3,3", "2,3,2"], seed123)
    for puzzle in load_puzzles("sudoku-4x4.jsonl")[::3]:  # 128 of the 384 puzzles
        clues = parse_board(puzzle["puzzle"])
        solution = parse_board(puzzle["solution"])
        board = clues.copy()
        for _ in range(RNG.randint(0, 4)):  # some cases start from a mid-game board (right or wrong fills)
            move = parse_move(sudoku_action(board, clues, solution))
            if move and 0 <= move[0] < 4 and 0 <= move[1] < 4 and 1 <= move[2] <= 4 \
                    and clues[move[0], move[1]] == 0:
                board[move[0], move[1]] = move[2]
        actions = []
        scratch = board.copy()
        for _ in range(RNG.randint(1, 14)):
            action = sudoku_action(scratch, clues, solution)
            actions.append(action)
            move = parse_move(action)
            if move and 0 <= move[0] < 4 and 0 <= move[1] < 4 and 1 <= move[2] <= 4:
                r, c, v = move
                box = scratch[r // 2 * 2:r // 2 * 2 + 2, c // 2 * 2:c // 2 * 2 + 2]
                if clues[r, c] == 0 and v not in scratch[r, :] and v not in scratch[:, c] and v not in box:
                    scratch[r, c] = v
        render = render_board(board)
        same = bool((board == clues).all())
        given_puzzle = None if same and RNG.random() < 0.5 else puzzle["puzzle"]
        add(f"seed {puzzle['seed']}: moves", render, actions, given_puzzle,
            with_description(render, describe_board(board)))
    return cases


def slippery_cases() -> list[dict]:
    """Slippery FrozenLake: our slip RNG is not gymnasium's PCG64, so instead of one sampled path
    each case lists every outcome gymnasium's transition table `P[s][a]` allows (is_slippery=True)."""
    cases = []
    for puzzle in RNG.sample(load_puzzles("frozenlake-4x4.jsonl"), 40):
        action = RNG.choice(LAKE_ACTIONS)
        deterministic, desc = lake_from_render(puzzle["render"])
        env = GymFrozenLake(desc=desc, is_slippery=True)
        env.reset(seed=0)
        outcomes = {}
        for probability, nxt, reward, terminated in env.P[int(deterministic.s)][LAKE_ACTIONS.index(action)]:
            env.s = nxt
            outcomes[lake_render(env)] = dict(render=lake_render(env), reward=reward, done=bool(terminated),
                                              probability=outcomes.get(lake_render(env), {}).get("probability", 0)
                                              + probability)
        cases.append(dict(case=f"seed {puzzle['seed']}: slippery {action}",
                          input=dict(env="frozenlake", render=puzzle["render"], actions=[action]),
                          outcomes=list(outcomes.values())))
    return cases


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("sokoban", sokoban_cases), ("frozenlake", frozenlake_cases), ("sudoku", sudoku_cases),
                       ("frozenlake-slippery", slippery_cases)):
        cases = make()
        with open(OUT / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for case in cases:
                f.write(json.dumps(case, ensure_ascii=False) + "\n")
        transitions = sum(len(c["expected"]["renders"]) if "expected" in c else 1 for c in cases)
        print(f"{name}: {len(cases)} cases, {transitions} transitions -> {OUT / (name + '.jsonl')}")


if __name__ == "__main__":
    main()
