"""Learning check (issue item 6): world-model SFT from scratch, one arm per annotation.

    python -m spa_trainer.learning_check --arm gt --train rows.jsonl --heldout heldout.jsonl \
        --size tiny --epochs 1 --out runs/learning-check/gt

Trains a freshly initialised model on one arm's rows with the paper-faithful target (reference
§8.3: CE on the whole response, nothing from the prompt) and evaluates greedy next-state
prediction on held-out ground-truth rows, the metric of `sft_metrics.next_state_exact_match`.
Besides full exact match it reports grid-only exact match, coordinate-line exact match,
per-cell accuracy and accuracy on the cells the transition changes, so partial learning shows.

Why a loop here instead of `spa_trainer.sft`: on 2 shared CPU cores, padded mini-batches run
~3x faster per row than sft.py's micro-batches of one, and rows are left-truncated to a window
(as sft.py's `--max-length` does) because the ~400-token instruction prefix carries nothing
the transition depends on. Evaluation gives the model the same window: the last
`max_length - max_new_tokens` tokens of the prefix. `--full-prefix-rows` additionally runs
sft_metrics' own metric on untruncated prefixes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_cosine_schedule_with_warmup
from transformers.utils import logging as hf_logging

from .data import SftRow, open_source
from .masking import IGNORE_INDEX, Example, encode_faithful, faithful_texts, observation_spans, prediction_spans
from .models import load_policy
from .sft_metrics import next_state_exact_match
from .tiny_model import DEFAULT_SPEC, TinySpec, tiny_model_dir

MODEL_SIZES: dict[str, TinySpec] = {
    "tiny": DEFAULT_SPEC,  # hidden 64, 2 layers: the spec every test uses
    # A bigger from-scratch config for learning the transition; same tokenizer and seed.
    "small": TinySpec(hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4),
}


@dataclass(frozen=True)
class CheckConfig:
    """One arm's run; defaults sized for minutes on 2 CPU cores."""

    arm: str
    train: str
    heldout: str
    out: str
    size: str = "tiny"
    epochs: int = 1  # fresh puzzles are cheap: more rows beat more epochs
    batch_size: int = 8
    lr: float = 3e-3  # from scratch: 30x SPA's fine-tuning lr (reference §8.3); 1e-3 stalled at loss 2.4
    max_length: int = 256  # training window, left-truncated (sft.py's --max-length)
    max_new_tokens: int = 64  # > the longest 6x6 Sokoban state (~45 tiny tokens)
    eval_rows: int = 200
    full_prefix_rows: int = 0
    threads: int = 2
    seed: int = 0


@dataclass(frozen=True)
class Prediction:
    """One held-out row: the true next state, the observation before it, and the decoded text."""

    truth: str
    observation: str
    decoded: str
    closed: bool  # the model wrote `</prediction>`


def read_rows(path: str) -> list[SftRow]:
    """All rows of a JSONL file of SftRow."""
    source = open_source(f"jsonl:{path}")
    return [s.row for s in source.read({}, source.end_offsets())]


def collate(batch: Sequence[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a mini-batch; padded positions are masked out of attention and loss."""
    width = max(len(ex.input_ids) for ex in batch)
    ids = [ex.input_ids + [pad_id] * (width - len(ex.input_ids)) for ex in batch]
    labels = [ex.labels + [IGNORE_INDEX] * (width - len(ex.labels)) for ex in batch]
    mask = [[1] * len(ex.input_ids) + [0] * (width - len(ex.input_ids)) for ex in batch]
    return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "attention_mask": torch.tensor(mask)}


def train(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: list[SftRow], cfg: CheckConfig) -> float:
    """Epochs of shuffled mini-batches with SPA's optimizer recipe (reference §8.2: AdamW betas
    (0.9, 0.95), wd 0.01, cosine with 10% warmup, clip 1.0). Loss is the token mean over the
    mini-batch. Returns the last step's loss."""
    examples = [encode_faithful(tokenizer, r, cfg.max_length, mask_transitions=r.mask_transitions) for r in rows]
    steps_per_epoch = math.ceil(len(examples) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.01)
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(0.1 * total), total)
    order = random.Random(cfg.seed)
    model.train()
    loss_value, step, t0 = math.nan, 0, time.perf_counter()
    for epoch in range(cfg.epochs):
        shuffled = examples[:]
        order.shuffle(shuffled)
        for start in range(0, len(shuffled), cfg.batch_size):
            batch = collate(shuffled[start : start + cfg.batch_size], tokenizer.pad_token_id)
            loss = model(**batch).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step, loss_value = step + 1, float(loss.detach())
            if step % 20 == 0 or step == total:
                print(
                    f"[learning-check {cfg.arm}] epoch {epoch} step {step}/{total} loss {loss_value:.4f} "
                    f"{time.perf_counter() - t0:.0f}s",
                    flush=True,
                )
    return loss_value


def eval_prefix(tokenizer: PreTrainedTokenizerBase, row: SftRow) -> tuple[list[int], str, str] | None:
    """(prefix ids up to and including `<prediction>`, true next state, observation) or None
    when the row has no prediction — the prefix of `sft_metrics.next_state_exact_match`."""
    prompt, target = faithful_texts(tokenizer, row)
    preds, obs = prediction_spans(target), observation_spans(target)
    if not preds or not obs:
        return None
    start, end = preds[0]
    ids = tokenizer(prompt + target[:start], add_special_tokens=False)["input_ids"]
    return list(ids), target[start:end], target[obs[0][0] : obs[0][1]]


@torch.no_grad()
def predict(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Sequence[SftRow], cfg: CheckConfig
) -> list[Prediction]:
    """Greedy next-state decoding on the last `max_length - max_new_tokens` prefix tokens, in
    left-padded batches (the window the model was trained on)."""
    model.eval()
    window = cfg.max_length - cfg.max_new_tokens
    cases = [c for c in (eval_prefix(tokenizer, r) for r in rows) if c is not None][: cfg.eval_rows]
    out: list[Prediction] = []
    for start in range(0, len(cases), cfg.batch_size):
        chunk = cases[start : start + cfg.batch_size]
        prefixes = [ids[-window:] for ids, _, _ in chunk]
        width = max(len(p) for p in prefixes)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prefixes])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prefixes])
        generated = model.generate(
            ids, attention_mask=mask, max_new_tokens=cfg.max_new_tokens, do_sample=False, pad_token_id=pad
        )
        for (_, truth, observation), row_ids in zip(chunk, generated[:, width:]):
            text = tokenizer.decode(row_ids, skip_special_tokens=False)
            decoded, closed = text.split("</prediction>")[0], "</prediction>" in text
            out.append(Prediction(truth, observation, decoded, closed))
    return out


def split_state(state: str) -> tuple[list[str], str]:
    """(grid lines, coordinate sentence) of a Sokoban state text (reference §5)."""
    lines = state.split("\n")
    grid = [line for line in lines if line and line[0] == "#"]
    rest = [line for line in lines if not (line and line[0] == "#")]
    return grid, "\n".join(rest)


def score(predictions: Sequence[Prediction]) -> dict[str, float]:
    """Exact match (full, grid only, coordinate line), per-cell accuracy over the true grid's
    cells, and accuracy on the cells where the true next grid differs from the observation."""
    full = grid_em = coords_em = cells = cells_ok = changed = changed_ok = 0
    for p in predictions:
        true_grid, true_coords = split_state(p.truth)
        obs_grid, _ = split_state(p.observation)
        got_grid, got_coords = split_state(p.decoded)
        full += int(p.closed and p.decoded == p.truth)
        grid_em += int(got_grid == true_grid)
        coords_em += int(got_coords == true_coords)
        for r, line in enumerate(true_grid):
            got = got_grid[r] if r < len(got_grid) else ""
            before = obs_grid[r] if r < len(obs_grid) else ""
            for c, cell in enumerate(line):
                hit = c < len(got) and got[c] == cell
                cells, cells_ok = cells + 1, cells_ok + int(hit)
                if c >= len(before) or before[c] != cell:
                    changed, changed_ok = changed + 1, changed_ok + int(hit)
    n = len(predictions)
    return {
        "rows": n,
        "exact_match": full / n if n else math.nan,
        "grid_exact_match": grid_em / n if n else math.nan,
        "coords_exact_match": coords_em / n if n else math.nan,
        "cell_accuracy": cells_ok / cells if cells else math.nan,
        "changed_cell_accuracy": changed_ok / changed if changed else math.nan,
    }


def unchanged_baseline(predictions: Sequence[Prediction]) -> dict[str, float]:
    """The same scores for "the next state is the observation" (no model): the floor a
    model that only copies would reach."""
    return score([Prediction(p.truth, p.observation, p.observation, True) for p in predictions])


def leaked_rows(train_rows: Sequence[SftRow], heldout_rows: Sequence[SftRow]) -> int:
    """Held-out rows whose response (observation, plan, prediction) also occurs in training:
    distinct seeds can still generate the same room."""
    seen = {r.response for r in train_rows}
    return sum(1 for r in heldout_rows if r.response in seen)


def run_check(cfg: CheckConfig) -> dict[str, object]:
    """Build a fresh model of `cfg.size`, train it on the arm's rows, score it on the held-out rows."""
    hf_logging.disable_progress_bar()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if cfg.size not in MODEL_SIZES:
        raise ValueError(f"--size {cfg.size!r}: expected one of {', '.join(MODEL_SIZES)}")
    model, tokenizer, folder = load_policy(str(tiny_model_dir(MODEL_SIZES[cfg.size])), torch.device("cpu"))
    train_rows, heldout_rows = read_rows(cfg.train), read_rows(cfg.heldout)
    params = sum(p.numel() for p in model.parameters())
    print(f"[learning-check {cfg.arm}] {len(train_rows)} train rows, {len(heldout_rows)} held out; "
          f"model {cfg.size} ({params / 1e6:.2f}M params, fresh from {folder.name})", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    final_loss = train(model, tokenizer, train_rows, cfg)
    train_seconds = time.perf_counter() - t0
    predictions = predict(model, tokenizer, heldout_rows, cfg)
    result: dict[str, object] = {
        "arm": cfg.arm,
        "config": asdict(cfg),
        "params": params,
        "train_rows": len(train_rows),
        "final_loss": final_loss,
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(time.perf_counter() - t0 - train_seconds, 1),
        "leaked_heldout_rows": leaked_rows(train_rows, heldout_rows),
        **score(predictions),
        "unchanged_baseline": unchanged_baseline(predictions),
        "samples": [asdict(p) for p in predictions[:3]],
    }
    if cfg.full_prefix_rows > 0:  # sft_metrics' own metric, untruncated prefix
        em, n = next_state_exact_match(model, tokenizer, heldout_rows, cfg.full_prefix_rows)
        result["full_prefix_exact_match"], result["full_prefix_rows"] = em, n
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"[learning-check {cfg.arm}] metrics {json.dumps({k: v for k, v in result.items() if k != 'samples'})}")
    return result


def parse_args(argv: list[str]) -> CheckConfig:
    """CLI flags → CheckConfig."""
    d = CheckConfig(arm="", train="", heldout="", out="")
    p = argparse.ArgumentParser(prog="python -m spa_trainer.learning_check", description=__doc__.split("\n")[0])
    p.add_argument("--arm", required=True, help="name of the arm (gt, self-belief, ...), for logs and the table")
    p.add_argument("--train", required=True, help="JSONL of SftRow to train on")
    p.add_argument("--heldout", required=True, help="JSONL of ground-truth SftRow to evaluate on")
    p.add_argument("--out", required=True, help="folder for metrics.json")
    p.add_argument("--size", default=d.size, choices=sorted(MODEL_SIZES))
    for flag, value in (("epochs", d.epochs), ("batch-size", d.batch_size), ("max-length", d.max_length),
                        ("max-new-tokens", d.max_new_tokens), ("eval-rows", d.eval_rows),
                        ("full-prefix-rows", d.full_prefix_rows), ("threads", d.threads), ("seed", d.seed)):  # fmt: skip
        p.add_argument(f"--{flag}", type=int, default=value)
    p.add_argument("--lr", type=float, default=d.lr)
    a = p.parse_args(argv)
    return CheckConfig(
        arm=a.arm,
        train=a.train,
        heldout=a.heldout,
        out=a.out,
        size=a.size,
        epochs=a.epochs,
        batch_size=a.batch_size,
        lr=a.lr,
        max_length=a.max_length,
        max_new_tokens=a.max_new_tokens,
        eval_rows=a.eval_rows,
        full_prefix_rows=a.full_prefix_rows,
        threads=a.threads,
        seed=a.seed,
    )


if __name__ == "__main__":
    run_check(parse_args(sys.argv[1:]))
