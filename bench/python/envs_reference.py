#!/usr/bin/env python3
"""Python reference throughputs for `npm run bench -- envs` (bench/envs.ts runs this as a subprocess).

Measures, single-threaded, each for about `--seconds`:
- frozenlake: the real gymnasium `FrozenLakeEnv` (slippery) step + a RAGEN-style text render;
- sokoban: gym_sokoban's step logic (push-or-move, `_calc_reward`, `_check_if_done`, reference §2.2)
  on numpy arrays as gym_sokoban stores them, + the text render RAGEN returns from `step`;
- sudoku: RAGEN's Sudoku step rules (reference §2.4) on a numpy board, + its text render;
- sokoban rooms: the room generator as reference §2.2 describes it (random-walk topology, placement,
  reverse-play DFS with ttl 300 and a 300 000-state cap, random player movement), with Python `random`
  and NumPy's legacy global RNG like RAGEN; written from that description, so not bit-exact with it.

The op of every step benchmark is "one step + render the new state", on the paper's puzzles
(envs/puzzles), random actions, reset from the puzzle pool at done, fixed seeds.
Prints one JSON object: {"frozenlake": steps/s, "sokoban": steps/s, "sudoku": steps/s, "sokoban_rooms": rooms/s}.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

PUZZLES = Path(__file__).resolve().parents[2] / "envs" / "puzzles"


def load(name: str) -> list[dict]:
    with open(PUZZLES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def timed(seconds: float, body) -> float:
    """Calls `body(n)` in batches until `seconds` passed; returns ops per second."""
    done, batch = 0, 256
    start = time.perf_counter()
    while True:
        body(batch)
        done += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


# ---------------------------------------------------------------- FrozenLake (gymnasium)
def bench_frozenlake(seconds: float) -> float:
    from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv

    pool = [FrozenLakeEnv(desc=p["desc"], is_slippery=True) for p in load("frozenlake-4x4.jsonl")]
    for i, env in enumerate(pool):
        env.reset(seed=i)
    rng = random.Random(0)
    state = {"i": 0}

    def render(env) -> str:  # RAGEN's text render: S as floor, player P / X / √
        row, col = divmod(int(env.s), env.ncol)
        lines = []
        for r in range(env.nrow):
            chars = [{"H": "O", "G": "G"}.get(t.decode(), "_") for t in env.desc[r]]
            if r == row:
                chars[col] = {"H": "X", "G": "√"}.get(env.desc[r, col].decode(), "P")
            lines.append("".join(chars))
        return "\n".join(lines)

    def body(n: int) -> None:
        env = pool[state["i"]]
        for _ in range(n):
            _, _, terminated, _, _ = env.step(rng.randrange(4))
            render(env)
            if terminated:
                state["i"] = (state["i"] + 1) % len(pool)
                env = pool[state["i"]]
                env.reset()

    return timed(seconds, body)


# ---------------------------------------------------------------- Sokoban (gym_sokoban step)
CHARS = {"#": (0, 0), "_": (1, 1), "O": (2, 2), "√": (2, 3), "X": (1, 4), "P": (1, 5), "S": (2, 5)}
GRID = np.array(["#", "_", "O", "√", "X", "P", "S"])
CHANGE = [np.array(d) for d in [(-1, 0), (1, 0), (0, -1), (0, 1)]]


class Sokoban:
    def __init__(self, fixed: np.ndarray, state: np.ndarray):
        self.room_fixed, self.room_state = fixed, state.copy()
        self.player_position = np.argwhere(self.room_state == 5)[0]
        self.num_boxes = int(np.sum((state == 3) | (state == 4)))
        self.boxes_on_target = int(np.sum(state == 3))
        self.num_env_steps, self.max_steps = 0, 100

    def _move(self, change) -> bool:
        new = self.player_position + change
        if self.room_state[new[0], new[1]] in [1, 2]:
            self.room_state[new[0], new[1]] = 5
            old = self.player_position
            self.room_state[old[0], old[1]] = self.room_fixed[old[0], old[1]]
            self.player_position = new
            return True
        return False

    def _push(self, change) -> bool:
        new = self.player_position + change
        box = new + change
        if box[0] >= self.room_state.shape[0] or box[1] >= self.room_state.shape[1]:
            return False
        if self.room_state[new[0], new[1]] in [3, 4] and self.room_state[box[0], box[1]] in [1, 2]:
            old = self.player_position
            self.room_state[new[0], new[1]] = 5
            self.room_state[old[0], old[1]] = self.room_fixed[old[0], old[1]]
            self.room_state[box[0], box[1]] = 3 if self.room_fixed[box[0], box[1]] == 2 else 4
            self.player_position = new
            return True
        return self._move(change)

    def step(self, action: int) -> bool:
        self.num_env_steps += 1
        self._push(CHANGE[action - 1])
        reward = -0.1
        uncovered = (self.room_state == 2) | ((self.room_fixed == 2) & (self.room_state == 5))
        on_target = self.num_boxes - np.where(uncovered)[0].shape[0]
        if on_target > self.boxes_on_target:
            reward += 1
        elif on_target < self.boxes_on_target:
            reward -= 1
        won = np.where((self.room_state == 2) | ((self.room_fixed == 2) & (self.room_state == 5)))[0].shape[0] == 0
        if won:
            reward += 10
        self.boxes_on_target = on_target
        return won or self.num_env_steps == self.max_steps

    def render(self) -> str:
        shown = np.where((self.room_state == 5) & (self.room_fixed == 2), 6, self.room_state)
        return "\n".join("".join(row) for row in GRID[shown])


def bench_sokoban(seconds: float) -> float:
    pool = []
    for p in load("sokoban-6x6-1box.jsonl"):
        rows = p["render"].split("\n")
        fixed = np.array([[CHARS[c][0] for c in row] for row in rows], dtype=np.uint8)
        state = np.array([[CHARS[c][1] for c in row] for row in rows], dtype=np.uint8)
        pool.append((fixed, state))
    rng = random.Random(0)
    holder = {"i": 0, "env": Sokoban(*pool[0])}

    def body(n: int) -> None:
        env = holder["env"]
        for _ in range(n):
            done = env.step(rng.randint(1, 4))
            env.render()
            if done:
                holder["i"] = (holder["i"] + 1) % len(pool)
                env = holder["env"] = Sokoban(*pool[holder["i"]])

    return timed(seconds, body)


# ---------------------------------------------------------------- Sudoku (RAGEN rules)
class Sudoku:
    def __init__(self, puzzle: str):
        rows = [r.split() for r in puzzle.split("|") if r.strip()]
        self.initial_board = np.array([[0 if v == "." else int(v) for v in r] for r in rows])
        self.board = self.initial_board.copy()
        self.current_step, self.max_steps = 0, 30

    @staticmethod
    def parse(action: str):
        s = action.lower().strip()
        parts = s.replace(",", " ").split()
        if len(parts) >= 3 and all(p.lstrip("-").isdigit() for p in parts[:3]):
            return int(parts[0]) - 1, int(parts[1]) - 1, int(parts[2])
        return None, None, None

    def step(self, action: str) -> bool:
        self.current_step += 1
        row, col, value = self.parse(action)
        capped = self.current_step >= self.max_steps
        if row is None or not (0 <= row < 4 and 0 <= col < 4 and 1 <= value <= 4) \
                or self.initial_board[row, col] != 0:
            return capped
        sr, sc = row // 2 * 2, col // 2 * 2
        if value in self.board[row, :] or value in self.board[:, col] or value in self.board[sr:sr + 2, sc:sc + 2]:
            return capped
        self.board[row, col] = value
        if np.all(self.board != 0) and self.correct():
            return True
        return capped

    def correct(self) -> bool:
        need = {1, 2, 3, 4}
        groups = [self.board[i, :] for i in range(4)] + [self.board[:, j] for j in range(4)]
        groups += [self.board[r:r + 2, c:c + 2].ravel() for r in (0, 2) for c in (0, 2)]
        return all(set(g.tolist()) == need for g in groups)

    def render(self) -> str:
        return "".join("| " + "".join(("." if v == 0 else str(v)) + " " for v in row) for row in self.board)


def bench_sudoku(seconds: float) -> float:
    pool = [p["puzzle"] for p in load("sudoku-4x4.jsonl")]
    rng = random.Random(0)
    holder = {"i": 0, "env": Sudoku(pool[0])}

    def body(n: int) -> None:
        env = holder["env"]
        for _ in range(n):
            done = env.step(f"{rng.randint(1, 4)},{rng.randint(1, 4)},{rng.randint(1, 4)}")
            env.render()
            if done:
                holder["i"] = (holder["i"] + 1) % len(pool)
                env = holder["env"] = Sudoku(pool[holder["i"]])

    return timed(seconds, body)


# ---------------------------------------------------------------- Sokoban room generator (§2.2)
MASKS = [np.array(m).reshape(3, 3) for m in (
    [0, 0, 0, 1, 1, 1, 0, 0, 0], [0, 1, 0, 0, 1, 0, 0, 1, 0], [0, 0, 0, 1, 1, 0, 0, 1, 0],
    [0, 0, 0, 1, 1, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1, 0, 1, 0])]
WALK = [(1, 0), (0, 1), (-1, 0), (0, -1)]


def topology(dim=(6, 6), p_change=0.35, num_steps=20) -> np.ndarray:
    level = np.zeros(dim, dtype=int)
    direction = random.sample(WALK, 1)[0]
    pos = np.array([random.randint(1, dim[0] - 1), random.randint(1, dim[1] - 1)])
    for _ in range(num_steps):
        if random.random() < p_change:
            direction = random.sample(WALK, 1)[0]
        pos = pos + direction
        pos[0] = max(min(pos[0], dim[0] - 2), 1)
        pos[1] = max(min(pos[1], dim[1] - 2), 1)
        mask = random.sample(MASKS, 1)[0]
        level[pos[0] - 1:pos[0] + 2, pos[1] - 1:pos[1] + 2] += mask
    level[level > 0] = 1
    level[:, [0, dim[1] - 1]] = 0
    level[[0, dim[0] - 1], :] = 0
    return level


class ReversePlay:
    """Pull-only DFS from the solved room; score = box swaps × Σ Manhattan(box, its target)."""

    def __init__(self, structure: np.ndarray, num_boxes: int):
        self.structure, self.num_boxes = structure, num_boxes
        self.explored: set[bytes] = set()
        self.best_score, self.best = -1, None

    def dfs(self, state, mapping, swaps, last_pull, ttl):
        ttl -= 1
        if ttl <= 0 or len(self.explored) >= 300_000:
            return
        key = state.tobytes()
        if key in self.explored:
            return
        score = swaps * sum(abs(b[0] - t[0]) + abs(b[1] - t[1]) for t, b in mapping.items())
        if np.where(state == 2)[0].shape[0] != self.num_boxes:
            score = 0
        if score > self.best_score:
            self.best_score, self.best = score, (state.copy(), dict(mapping))
        self.explored.add(key)
        for change in CHANGE:
            nxt, nxt_mapping = state.copy(), dict(mapping)
            pulled = self.pull(nxt, nxt_mapping, change)
            pull = pulled if pulled is not None else last_pull
            self.dfs(nxt, nxt_mapping, swaps + (pull != last_pull), pull, ttl)

    def pull(self, state, mapping, change):
        player = tuple(np.argwhere(state == 5)[0])
        to = (player[0] + change[0], player[1] + change[1])
        if state[to] not in (1, 2):
            return None
        state[player], state[to] = self.structure[player], 5
        behind = (player[0] - change[0], player[1] - change[1])
        if state[behind] in (3, 4):
            state[player], state[behind] = 3, self.structure[behind]
            for target, box in mapping.items():
                if box == behind:
                    mapping[target] = player
                    return target
        return None


def generate_room(dim=(6, 6), num_boxes=1) -> np.ndarray | None:
    for _ in range(4):
        structure = topology(dim)
        floor = np.argwhere(structure == 1)
        if len(floor) <= num_boxes + 1:
            return None
        picks = [tuple(floor[i]) for i in np.random.choice(len(floor), num_boxes + 1, replace=False)]
        state = structure.copy()
        state[picks[0]] = 5
        for target in picks[1:]:
            structure[target] = 2
            state[target] = 4
        search = ReversePlay(structure, num_boxes)
        search.dfs(state, {t: t for t in picks[1:]}, 0, (-1, -1), 300)
        if search.best_score > 0:
            room = search.best[0]
            room[room == 3] = 4
            return add_player_movement(room, structure, 0.8 if search.best_score == 1 else 0.5)
    return None


def add_player_movement(room, structure, p_move) -> np.ndarray:
    if random.random() > p_move:
        return room
    player = tuple(np.argwhere(room == 5)[0])
    visited = {player}
    for _ in range(3):
        options = [(player[0] + dr, player[1] + dc) for dr, dc in CHANGE]
        options = [p for p in options if room[p] in (1, 2) and p not in visited]
        if not options:
            break
        nxt = random.choice(options)
        room[player], room[nxt] = structure[player], 5
        player = nxt
        visited.add(nxt)
        if random.random() > 0.5:
            break
    return room


def bench_rooms(seconds: float) -> float:
    counter = {"seed": 0}

    def body(n: int) -> None:
        for _ in range(n):
            seed = counter["seed"]
            counter["seed"] += 1
            for attempt in range(100):  # RAGEN retries failed seeds with a new seed
                random.seed(seed * 1000 + attempt)
                np.random.seed((seed * 1000 + attempt) % 2**32)
                if generate_room() is not None:
                    break

    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        body(8)
        done += 8
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(json.dumps({
        "frozenlake": bench_frozenlake(args.seconds),
        "sokoban": bench_sokoban(args.seconds),
        "sudoku": bench_sudoku(args.seconds),
        "sokoban_rooms": bench_rooms(args.seconds),
    }))


if __name__ == "__main__":
    main()
