"""Learning check (docs/learning-check.md): world-model SFT from scratch, one arm per annotation.

    python -m spa_trainer.learning_check --arm gt --train rows.jsonl --heldout heldout.jsonl \
        --size tiny-cells --epochs 1 --out runs/learning-check/gt

Trains a freshly initialised model on one arm's rows with the paper-faithful target
(docs/spa-sft.md#target: CE on the whole response, nothing from the prompt) and evaluates greedy next-state
prediction on held-out ground-truth rows, the metric of `sft_metrics.next_state_exact_match`.
Besides full exact match it reports grid-only exact match, coordinate-line exact match,
exact match on push vs plain-move transitions, per-cell accuracy and accuracy on the cells
the transition changes, so partial learning shows. During training it logs the loss on
`<prediction>` tokens alone and, every `--probe-every` steps, exact match on a few held-out rows.

Why a loop here instead of `spa_trainer.sft`: on 2 shared CPU cores, padded mini-batches run
~3x faster per row than sft.py's micro-batches of one, and rows are left-truncated to a window
(as sft.py's `--max-length` does) because the ~400-token instruction prefix carries nothing
the transition depends on. Evaluation gives the model the same window: the last
`max_length - max_new_tokens` tokens of the prefix. `--full-prefix-rows` additionally runs
sft_metrics' own metric on untruncated prefixes.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_cosine_schedule_with_warmup
from transformers.utils import logging as hf_logging

from ..cli.errors import EPOCHS_MAX, ROWS_MAX, SEED_MAX, STEPS_MAX, THREADS_MAX, TOKENS_MAX, float_arg, int_arg
from ..data.sft_rows import SftRow
from ..json_files import dumps
from ..models.load import generate, load_policy, pad_token_id
from ..models.tiny import DEFAULT_SPEC, TINY_MODELS, TinySpec, tiny_model_dir
from ..sft.masking import (
    IGNORE_INDEX,
    Example,
    faithful_texts,
    masked_spans,
    observation_spans,
    prediction_spans,
    tokens_in_spans,
)
from ..sft.metrics import next_state_exact_match
from ..topics.sources import open_source

_SMALL = TinySpec(hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4)
MODEL_SIZES: dict[str, TinySpec] = {
    **TINY_MODELS,  # tiny (hidden 64, 2 layers: the spec every test uses) and tiny-cells
    "tiny-rope1e4": replace(DEFAULT_SPEC, rope_theta=1e4),
    "deep-cells": TinySpec(num_hidden_layers=4, grid_cell_tokens=True, rope_theta=1e4),
    "deep": TinySpec(num_hidden_layers=4, rope_theta=1e4),  # hidden 64, 4 layers
    "small": _SMALL,  # hidden 128, 4 layers
    "small-rope1e4": replace(_SMALL, rope_theta=1e4),
}
"""From-scratch models for the check: the tiny tokenizer and architecture at other sizes."""


def fresh_model(spec: TinySpec) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, Path]:
    """(randomly initialised model, tokenizer, folder) of `spec`, built like every tiny model."""
    folder = tiny_model_dir(spec)
    model, tokenizer, _ = load_policy(str(folder), torch.device("cpu"))
    return model, tokenizer, folder


@dataclass(frozen=True)
class CheckConfig:
    """One arm's run; defaults sized for minutes on 2 CPU cores."""

    arm: str
    train: str
    heldout: str
    out: str
    size: str = "tiny-cells"
    epochs: int = 1  # fresh puzzles are cheap: more rows beat more epochs
    batch_size: int = 16
    lr: float = 5e-3  # from scratch: 50x SPA's fine-tuning lr (docs/spa-sft.md#target); 1e-3 stalled at loss 2.4
    max_length: int = 330  # training window, left-truncated (sft.py's --max-length): State block + response (<= 323)
    max_new_tokens: int = 80  # > the longest 6x6 Sokoban state in grid-cell tokens (75) + `</prediction>`
    eval_rows: int = 200
    full_prefix_rows: int = 0
    probe_every: int = 0  # steps between quick held-out exact-match probes (0: none)
    probe_rows: int = 48
    threads: int = 1  # arms run side by side, one core each
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


_ENCODE_CHUNK = 4096
_MARGIN = 16  # tokens of context before the training window that a prompt cut may change


@dataclass(frozen=True)
class TrainExample:
    """A training sequence plus, per token, whether it lies inside a `<prediction>` span."""

    example: Example
    in_prediction: list[bool]


def encode_all(tokenizer: PreTrainedTokenizerBase, rows: Sequence[SftRow], max_length: int) -> list[TrainExample]:
    """`encode_faithful` of every row (docs/spa-sft.md#target: CE on the whole response, none on the
    prompt, left truncation), plus the prediction-token flags for the loss log.

    Hand-written instead of calling `encode_faithful` per row: that tokenises each ~1,000-token
    prompt in its own call, ~12 ms a row and most of the preparation time. Here the tokenizer
    runs on whole lists, and only the prompt's last characters are tokenised: the ids inside
    the window equal the full prompt's when at least `_MARGIN` tokens precede the window (a cut
    changes only the word it splits). Rows without that margin tokenise the full prompt.
    """
    if len(rows) > _ENCODE_CHUNK:  # bounds the tokenizer's transient memory
        return [
            ex
            for i in range(0, len(rows), _ENCODE_CHUNK)
            for ex in encode_all(tokenizer, rows[i : i + _ENCODE_CHUNK], max_length)
        ]
    texts = [faithful_texts(tokenizer, row) for row in rows]
    cuts = [prompt[-4 * max_length :] for prompt, _ in texts]
    prompts = tokenizer(cuts, add_special_tokens=False)["input_ids"]
    targets = tokenizer([t for _, t in texts], add_special_tokens=False, return_offsets_mapping=True)
    out: list[TrainExample] = []
    for i, row in enumerate(rows):
        prompt_ids, target_ids = list(prompts[i]), list(targets["input_ids"][i])
        if len(prompt_ids) + len(target_ids) < max_length + _MARGIN and cuts[i] != texts[i][0]:
            prompt_ids = list(tokenizer(texts[i][0], add_special_tokens=False)["input_ids"])
        offsets = [tuple(o) for o in targets["offset_mapping"][i]]
        masked = tokens_in_spans(offsets, prediction_spans(texts[i][1]))
        # a row flagged mask_transitions leaves both states out of the loss (docs/spa-sft.md#masking)
        mask = "transitions" if row.mask_transitions else "none"
        excluded = tokens_in_spans(offsets, masked_spans(texts[i][1], mask))
        trained = [IGNORE_INDEX if x else t for t, x in zip(target_ids, excluded)]
        keep = min(max_length, len(prompt_ids) + len(target_ids))
        ids, labels = prompt_ids + target_ids, [IGNORE_INDEX] * len(prompt_ids) + trained
        out.append(TrainExample(Example(ids[-keep:], labels[-keep:]), ([False] * len(prompt_ids) + masked)[-keep:]))
    return out


def collate(batch: Sequence[TrainExample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a mini-batch; padded positions are masked out of attention and loss."""
    width = max(len(ex.example.input_ids) for ex in batch)
    pad = [width - len(ex.example.input_ids) for ex in batch]
    ids = [ex.example.input_ids + [pad_id] * n for ex, n in zip(batch, pad)]
    labels = [ex.example.labels + [IGNORE_INDEX] * n for ex, n in zip(batch, pad)]
    mask = [[1] * len(ex.example.input_ids) + [0] * n for ex, n in zip(batch, pad)]
    flags = [ex.in_prediction + [False] * n for ex, n in zip(batch, pad)]
    return {
        "input_ids": torch.tensor(ids),
        "labels": torch.tensor(labels),
        "attention_mask": torch.tensor(mask),
        "in_prediction": torch.tensor(flags),
    }


def losses(model: PreTrainedModel, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, float]:
    """(token-mean CE over all labelled tokens, the same over prediction tokens only). The
    second is the number to watch: the observation copy is easy, the transition is not."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
    labels = batch["labels"][:, 1:]
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), reduction="none"
    ).view(labels.shape)
    trained = labels != IGNORE_INDEX
    pred = trained & batch["in_prediction"][:, 1:]
    loss = nll[trained].mean()
    return loss, float(nll[pred].mean().detach()) if pred.any() else math.nan


def train(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: list[SftRow],
    cfg: CheckConfig,
    probe: Callable[[int], None] = lambda step: None,
) -> float:
    """Epochs of shuffled mini-batches with SPA's optimizer recipe (docs/spa-sft.md#settings: AdamW betas
    (0.9, 0.95), wd 0.01, cosine with 10% warmup, clip 1.0). Loss is the token mean over the
    mini-batch. Calls `probe(step)` every `cfg.probe_every` steps. Returns the mean loss of
    the last 20 steps."""
    examples = encode_all(tokenizer, rows, cfg.max_length)
    total = math.ceil(len(examples) / cfg.batch_size) * cfg.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.01)
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(0.1 * total), total)
    order = random.Random(cfg.seed)
    recent: list[tuple[float, float]] = []
    step, t0 = 0, time.perf_counter()
    for epoch in range(cfg.epochs):
        shuffled = examples[:]
        order.shuffle(shuffled)
        for start in range(0, len(shuffled), cfg.batch_size):
            model.train()
            loss, pred_loss = losses(model, collate(shuffled[start : start + cfg.batch_size], pad_token_id(tokenizer)))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            recent = [*recent[-19:], (float(loss.detach()), pred_loss)]
            if step % 20 == 0 or step == total:
                mean_loss, mean_pred = (sum(x) / len(recent) for x in zip(*recent))
                print(
                    f"[learning-check {cfg.arm}] epoch {epoch} step {step}/{total} loss {mean_loss:.4f} "
                    f"prediction-token loss {mean_pred:.4f} {time.perf_counter() - t0:.0f}s",
                    flush=True,
                )
            if cfg.probe_every and step % cfg.probe_every == 0 and step < total:
                probe(step)
    return sum(x for x, _ in recent) / len(recent) if recent else math.nan


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
        pad = pad_token_id(tokenizer)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prefixes])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prefixes])
        generated = generate(
            model, ids, attention_mask=mask, max_new_tokens=cfg.max_new_tokens, do_sample=False, pad_token_id=pad
        )
        for (_, truth, observation), row_ids in zip(chunk, generated[:, width:]):
            text = str(tokenizer.decode(row_ids, skip_special_tokens=False))
            decoded, closed = text.split("</prediction>")[0], "</prediction>" in text
            out.append(Prediction(truth, observation, decoded, closed))
    return out


def split_state(state: str) -> tuple[list[str], str]:
    """(grid lines, coordinate sentence) of a Sokoban state text (docs/spa-prompts.md#states)."""
    lines = state.split("\n")
    grid = [line for line in lines if line and line[0] == "#"]
    rest = [line for line in lines if not (line and line[0] == "#")]
    return grid, "\n".join(rest)


def box_cells(grid: Sequence[str]) -> set[tuple[int, int]]:
    """Cells holding a box (`X` or `√`, docs/spa-envs.md#sokoban) in grid lines."""
    return {(r, c) for r, line in enumerate(grid) for c, ch in enumerate(line) if ch in "X√"}


def is_push(p: Prediction) -> bool:
    """Whether the true transition moves a box (a push), read off the two grids."""
    return box_cells(split_state(p.truth)[0]) != box_cells(split_state(p.observation)[0])


def exact(p: Prediction) -> bool:
    """The whole next state (grid and coordinate sentence) decoded exactly, tag closed."""
    return p.closed and p.decoded == p.truth


def score(predictions: Sequence[Prediction]) -> dict[str, float]:
    """Exact match (full, grid only, coordinate line; full also split into push and plain-move
    transitions), per-cell accuracy over the true grid's cells, and accuracy on the cells where
    the true next grid differs from the observation."""
    grid_em = coords_em = cells = cells_ok = changed = changed_ok = 0
    for p in predictions:
        true_grid, true_coords = split_state(p.truth)
        obs_grid, _ = split_state(p.observation)
        got_grid, got_coords = split_state(p.decoded)
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
    pushes = [p for p in predictions if is_push(p)]
    moves = [p for p in predictions if not is_push(p)]

    def rate(hits: int, n: int) -> float:
        return hits / n if n else math.nan

    n = len(predictions)
    return {
        "rows": n,
        "exact_match": rate(sum(map(exact, predictions)), n),
        "push_fraction": rate(len(pushes), n),
        "push_exact_match": rate(sum(map(exact, pushes)), len(pushes)),
        "move_exact_match": rate(sum(map(exact, moves)), len(moves)),
        "grid_exact_match": rate(grid_em, n),
        "coords_exact_match": rate(coords_em, n),
        "cell_accuracy": rate(cells_ok, cells),
        "changed_cell_accuracy": rate(changed_ok, changed),
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
    model, tokenizer, folder = fresh_model(MODEL_SIZES[cfg.size])
    train_rows, heldout_rows = read_rows(cfg.train), read_rows(cfg.heldout)
    params = sum(p.numel() for p in model.parameters())
    print(f"[learning-check {cfg.arm}] {len(train_rows)} train rows, {len(heldout_rows)} held out; "
          f"model {cfg.size} ({params / 1e6:.2f}M params, fresh from {folder.name})", flush=True)  # fmt: skip
    probes: list[dict[str, float]] = []

    def probe(step: int) -> None:  # a learning curve: is exact match rising yet?
        shown = score(predict(model, tokenizer, heldout_rows[: cfg.probe_rows], cfg))
        probes.append({"step": step, **shown})
        print(f"[learning-check {cfg.arm}] probe step {step}: exact match {shown['exact_match']:.3f} "
              f"(push {shown['push_exact_match']:.3f}, move {shown['move_exact_match']:.3f}), "
              f"cell accuracy {shown['cell_accuracy']:.3f}", flush=True)  # fmt: skip

    t0 = time.perf_counter()
    final_loss = train(model, tokenizer, train_rows, cfg, probe)
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
        "probes": probes,
        "samples": [asdict(p) for p in predictions[:3]],
    }
    if cfg.full_prefix_rows > 0:  # sft_metrics' own metric, untruncated prefix
        em, n = next_state_exact_match(model, tokenizer, heldout_rows, cfg.full_prefix_rows)
        result["full_prefix_exact_match"], result["full_prefix_rows"] = em, n
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as f:  # every scored row, for error analysis
        f.writelines(dumps(asdict(p), ensure_ascii=False) + "\n" for p in predictions)
    print(f"[learning-check {cfg.arm}] metrics {dumps({k: v for k, v in result.items() if k != 'samples'})}")
    return result


def parse_args(argv: list[str]) -> CheckConfig:
    """CLI flags → CheckConfig."""
    d = CheckConfig(arm="", train="", heldout="", out="")
    p = argparse.ArgumentParser(
        prog="python -m spa_trainer.experiments.learning_check", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("--arm", required=True, help="name of the arm (gt, self-belief, ...), for logs and the table")
    p.add_argument("--train", required=True, help="JSONL of SftRow to train on")
    p.add_argument("--heldout", required=True, help="JSONL of ground-truth SftRow to evaluate on")
    p.add_argument("--out", required=True, help="folder for metrics.json")
    p.add_argument("--size", default=d.size, choices=sorted(MODEL_SIZES))
    for flag, lo, hi, value in (("epochs", 1, EPOCHS_MAX, d.epochs), ("batch-size", 1, ROWS_MAX, d.batch_size),
                                ("max-length", 1, TOKENS_MAX, d.max_length),
                                ("max-new-tokens", 1, TOKENS_MAX, d.max_new_tokens),
                                ("eval-rows", 0, ROWS_MAX, d.eval_rows),
                                ("full-prefix-rows", 0, ROWS_MAX, d.full_prefix_rows),
                                ("probe-every", 0, STEPS_MAX, d.probe_every), ("probe-rows", 0, ROWS_MAX, d.probe_rows),
                                ("threads", 1, THREADS_MAX, d.threads), ("seed", 0, SEED_MAX, d.seed)):  # fmt: skip
        int_arg(p, f"--{flag}", lo, hi, default=value)
    float_arg(p, "--lr", 0, 1, above=True, default=d.lr)
    a = vars(p.parse_args(argv))
    return CheckConfig(**{f.name: a[f.name] for f in fields(CheckConfig)})


if __name__ == "__main__":
    run_check(parse_args(sys.argv[1:]))
