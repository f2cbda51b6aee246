"""What a model knows of the game, scored on one fixed set of rows: next-state exact match,
observation copy and the board dependence of its action (docs/spa-sft.md#metrics), for several
models at once, so a check compares its start, its world-model SFT and its PPO ends on the same
held-out turns (docs/spa-check.md#probe).

    python -m spa_trainer.experiments.world_model_probe --input kafka:spa.<run>.sft \
        --model <start> --model <run>/sft --model <run>/ppo [--rows 96 --window 340]

The rows are the source's held-out puzzles (the SFT trainer's split by puzzle, `--val-fraction`), so
a model finetuned on the same topic is scored on turns it never trained on. Prints one JSON object:
`{"rows": n, "models": {<model>: {…metrics…}}}`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch

from ..cli.errors import ROWS_MAX, TOKENS_MAX, int_arg
from ..json_files import dumps
from ..models.load import load_policy
from ..sft.metrics import action_probe, next_state_exact_match, observation_copy
from ..sft.sampler import read_range
from ..topics.sources import open_source


def probe_model(model_name: str, rows: Sequence, limit: int, window: int) -> dict[str, float | int | None]:
    """One model's scores on `rows` (generation on the first `limit`, the action probe on all)."""
    model, tokenizer, _ = load_policy(model_name)
    model.eval()
    exact, exact_rows = next_state_exact_match(model, tokenizer, rows, limit, window)
    copy = observation_copy(model, tokenizer, rows, limit, window)
    action = action_probe(model, tokenizer, rows, window)
    return {
        "next_state_exact_match": exact,
        "exact_match_rows": exact_rows,
        "observation_copy_exact_match": copy.rate,
        "observation_copy_rows": copy.rows,
        "action_board_mi": action.mutual_information,
        "action_probe_rows": action.rows,
    }


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m spa_trainer.experiments.world_model_probe", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--input", required=True, help="SFT rows: kafka:<topic> or jsonl:<path>")
    p.add_argument("--brokers", default=None, help="Kafka bootstrap servers (KAFKA_BROKERS by default)")
    p.add_argument("--model", action="append", required=True, help="a model to score (repeat for several)")
    p.add_argument("--val-fraction", type=float, default=0.2, help="the held-out share, by puzzle (the SFT's)")
    int_arg(p, "--rows", 1, ROWS_MAX, default=96, help="held-out rows scored by greedy generation")
    int_arg(p, "--window", 1, TOKENS_MAX, default=340, help="tokens each row is seen through (the SFT window)")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    source = open_source(a.input, brokers=a.brokers)
    held_out = read_range(source, {}, source.end_offsets(), a.val_fraction).held_out
    if not held_out:
        raise SystemExit(f"world_model_probe: no held-out rows in {a.input}")
    rows = held_out[: max(a.rows, 1)]
    models = {}
    for name in a.model:
        print(f"[probe] {name}: {len(rows)} held-out rows…", file=sys.stderr, flush=True)
        models[name] = probe_model(name, rows, a.rows, a.window)
    print(dumps({"rows": len(rows), "models": models}))  # a metric without data is null, not NaN


if __name__ == "__main__":
    sys.exit(main())
