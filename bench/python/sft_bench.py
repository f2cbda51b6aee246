"""Python side of `npm run bench -- trainer` (run with trainer/.venv's python, PYTHONPATH=trainer).

One training run of one side per call; the TypeScript side (bench/trainer.ts) alternates the two:

  spa  --rows R --model M --steps N --batch-size B --lr LR --max-length L --seed S [--micro-batch m]
       spa_trainer.sft through its top-level `run_sft(SftConfig, on_step)`, one epoch over exactly
       N × B rows (so its cosine schedule spans the N steps), the end of each step timed by the hook
  trl  (the same flags)
       TRL's `SFTTrainer` on the same model folder and the same rows: each row becomes the
       (prompt, completion) texts spa's encoder trains on (`masking.faithful_texts`),
       completion-only loss, the same window cut on the left, the same schedule and optimizer
       settings, and the rows in the order spa's sampler visits them (TRL's sampler sequential)

Each call prints one JSON line last: per step the wall time at its end, its non-padding tokens
and its loss, plus what was compared. Tokens are counted the same way on both sides: the
`input_ids` of the step's rows after the window (spa pads nothing; TRL's padding is not counted,
and TRL's own `num_tokens`, the attention mask's sum, is checked against it). `--micro-batch`
(default: all B rows in one padded forward pass, TRL's usual layout) applies to both sides.

Which tokens each loss covers: both train the target of docs/spa-sft.md#target (the GT response
after its leading `<think>`, then `<|im_end|>`); no prompt token. The TRL side asserts that its
tokenized rows (ids and labels) equal spa's. Normalisation differs as far as TRL allows: spa
averages each row's token mean over the step's rows (SPA's micro-batches of one row), TRL takes
one mean over every target token of the step.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRL_MISSING = (
    "TRL is not installed in trainer/.venv. It is the trainer's optional `bench` extra: "
    "trainer/.venv/bin/pip install 'trl>=1.13'"
)


@dataclass
class Side:
    """One run's record: per optimizer step, the wall time at its end, tokens and loss."""

    side: str
    ends: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


def steady_tokens_per_s(ends: list[float], tokens: list[int], warmup: int) -> float:
    """Tokens per second over the steps after the first `warmup` ones: the tokens of steps
    warmup+1..N over the time from the end of step `warmup` to the end of step N (the first
    steps pay one-off costs such as the optimizer's state)."""
    if len(ends) != len(tokens):
        raise ValueError(f"{len(ends)} step times but {len(tokens)} token counts")
    if not 1 <= warmup < len(ends):
        raise ValueError(f"warm-up of {warmup} steps needs at least {warmup + 1} steps, got {len(ends)}")
    return sum(tokens[warmup:]) / (ends[-1] - ends[warmup - 1])


def spa_order(rows: int, seed: int) -> list[int]:
    """The order spa's sampler visits `rows` rows in epoch 0 (spa_trainer.sft.sampler.epoch_order)."""
    from spa_trainer.sft.sampler import epoch_order

    return epoch_order(rows, seed, 0)


def read_rows(path: str, count: int):
    """The first `count` SftRows of a JSONL file (the same reader spa's `jsonl:` input uses)."""
    from spa_trainer.topics.sources import open_source

    source = open_source(f"jsonl:{path}")
    rows = [s.row for s in source.read({}, source.end_offsets())][:count]
    if len(rows) < count:
        raise ValueError(f"{path} has {len(rows)} rows; the bench needs steps × batch size = {count}")
    return rows


def write_subset(rows_path: str, count: int, out: Path) -> Path:
    """The first `count` lines of `rows_path` as their own file: spa trains one epoch of exactly them."""
    lines = Path(rows_path).read_text(encoding="utf-8").splitlines(keepends=True)[:count]
    out.write_text("".join(lines), encoding="utf-8")
    return out


def run_spa(a: argparse.Namespace) -> Side:
    """spa_trainer.sft on the rows, timed by its step hook."""
    from spa_trainer.sft.masking import encode_faithful
    from spa_trainer.models.load import load_tokenizer, resolve_model_dir
    from spa_trainer.sft.config import SftConfig
    from spa_trainer.sft.train import run_sft

    count = a.steps * a.batch_size
    read_rows(a.rows, count)  # fails, naming the file, when it holds fewer rows than the run trains
    record = Side("spa")
    trained: list[list[Any]] = []

    def on_step(step: int, rows: list[Any], loss: float) -> None:
        record.ends.append(time.perf_counter())
        trained.append([s.row for s in rows])  # encoded for counting after the run, untimed
        record.losses.append(loss)

    with tempfile.TemporaryDirectory(prefix="spa-bench-sft-") as tmp:
        subset = write_subset(a.rows, count, Path(tmp) / "rows.jsonl")
        cfg = SftConfig(
            model=a.model,
            input=f"jsonl:{subset}",
            out=str(Path(tmp) / "run"),
            epochs=1,
            batch_size=a.batch_size,
            micro_batch_size=a.micro_batch,
            lr=a.lr,
            max_length=a.max_length,
            val_fraction=0.0,
            eval_rows=0,
            checkpoint_every=10**9,
            log_every=10**9,
            seed=a.seed,
        )
        run_sft(cfg, on_step=on_step)
    tokenizer = load_tokenizer(resolve_model_dir(a.model))
    record.tokens = [sum(len(encode_faithful(tokenizer, r, a.max_length).input_ids) for r in step) for step in trained]
    record.notes = {
        "micro_batch": a.micro_batch,
        "loss": "mean over the step's rows of each row's mean target-token loss (as SPA's micro-batches of one row)",
    }
    return record


def trl_dataset(tokenizer: Any, rows: list[Any], order: list[int]) -> list[dict[str, str]]:
    """TRL prompt-completion rows (plain text, not conversational) in `order`: the prompt and
    target texts spa's paper-faithful encoder trains on (spa_trainer.sft.masking.faithful_texts), so
    TRL's completion-only loss covers the same tokens."""
    from spa_trainer.sft.masking import faithful_texts

    pairs = [faithful_texts(tokenizer, rows[i]) for i in order]
    return [{"prompt": prompt, "completion": completion} for prompt, completion in pairs]


def same_tokens(prepared: Any, tokenizer: Any, rows: list[Any], order: list[int], max_length: int) -> int:
    """How many of TRL's prepared rows have exactly spa's input ids and labels."""
    from spa_trainer.sft.masking import encode_faithful

    same = 0
    for k, i in enumerate(order):
        ours = encode_faithful(tokenizer, rows[i], max_length)
        theirs = prepared[k]
        same += int(list(theirs["input_ids"]) == ours.input_ids and list(theirs["labels"]) == ours.labels)
    return same


def run_trl(a: argparse.Namespace) -> Side:
    """TRL's SFTTrainer on the same model folder and rows, timed by a callback."""
    try:
        import trl
        from trl import SFTConfig, SFTTrainer
    except ImportError:
        print(TRL_MISSING, file=sys.stderr)
        sys.exit(3)
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback

    from spa_trainer.models.load import load_tokenizer, resolve_model_dir

    if a.batch_size % a.micro_batch:
        raise ValueError(f"--micro-batch {a.micro_batch} must divide --batch-size {a.batch_size}")
    folder = resolve_model_dir(a.model)
    tokenizer = load_tokenizer(folder)
    torch.manual_seed(a.seed)
    model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, dtype=torch.float32)
    rows = read_rows(a.rows, a.steps * a.batch_size)
    order = spa_order(len(rows), a.seed)
    record = Side("trl")
    logged_tokens: list[int] = []

    class StepTimer(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            record.ends.append(time.perf_counter())

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                record.losses.append(float(logs["loss"]))
                logged_tokens.append(int(logs.get("num_tokens", -1)))

    with tempfile.TemporaryDirectory(prefix="spa-bench-trl-") as tmp:
        cfg = SFTConfig(
            output_dir=tmp,
            max_steps=a.steps,
            per_device_train_batch_size=a.micro_batch,
            gradient_accumulation_steps=a.batch_size // a.micro_batch,
            learning_rate=a.lr,
            adam_beta1=0.9,
            adam_beta2=0.95,
            weight_decay=0.01,
            lr_scheduler_type="cosine",
            warmup_steps=int(0.1 * a.steps),  # spa: int(warmup_ratio × total steps)
            max_grad_norm=1.0,
            max_length=a.max_length,
            truncation_mode="keep_end",  # spa cuts on the left (docs/spa-sft.md#target)
            completion_only_loss=True,
            gradient_checkpointing=False,  # TRL's default is on; spa does not recompute
            bf16=False,  # fp32 on CPU, as spa
            use_cpu=True,
            train_sampling_strategy="sequential",  # the dataset is already in spa's order
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            disable_tqdm=True,
            seed=a.seed,
        )
        dataset = Dataset.from_list(trl_dataset(tokenizer, rows, order))
        trainer = SFTTrainer(
            model=model, args=cfg, train_dataset=dataset, processing_class=tokenizer, callbacks=[StepTimer()]
        )
        prepared = trainer.train_dataset
        if prepared is None or len(prepared) != len(rows):  # pyright: ignore[reportArgumentType]
            raise RuntimeError("TRL dropped rows while preparing them (a row with no target token in the window?)")
        same = same_tokens(prepared, tokenizer, rows, order, a.max_length)
        record.tokens = [
            sum(len(prepared[k]["input_ids"]) for k in range(s * a.batch_size, (s + 1) * a.batch_size))
            for s in range(a.steps)
        ]
        trainer.train()
    cumulative = [sum(record.tokens[: s + 1]) for s in range(len(record.tokens))]
    record.notes = {
        "trl": trl.__version__,
        "micro_batch": a.micro_batch,
        "rows_tokenized_as_spa": f"{same}/{len(rows)}",
        "num_tokens_agrees": logged_tokens == cumulative,
        "loss": f"TRL {cfg.loss_type}: one mean over every target token of the step (completion_only_loss)",
        "optimizer": f"{cfg.optim.value} (TRL's default; weight decay skips biases and norms, spa decays all)",
    }
    return record


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="sft_bench.py")
    p.add_argument("side", choices=["spa", "trl"])
    p.add_argument("--rows", required=True, help="SftRow JSON Lines (spa generate --out rows.jsonl)")
    p.add_argument("--model", default="tiny-cells", help="tiny, tiny-cells or a local HF folder")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--micro-batch", type=int, default=None, help="rows per forward pass, padded (default: all)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup-steps", type=int, default=2, help="steps left out of tokens/s (one-off costs)")
    a = p.parse_args(argv)
    a.micro_batch = a.micro_batch or a.batch_size
    # Both sides on the CPU in fp32: spa would pick CUDA (with bf16 autocast) where there is one.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import datasets
    import torch

    datasets.disable_progress_bars()

    start = time.perf_counter()
    record = run_spa(a) if a.side == "spa" else run_trl(a)
    out = {
        "side": record.side,
        "tokens_per_s": steady_tokens_per_s(record.ends, record.tokens, a.warmup_steps),
        "ends": record.ends,
        "tokens": record.tokens,
        "losses": [x if math.isfinite(x) else None for x in record.losses],
        "notes": record.notes,
        "torch_threads": torch.get_num_threads(),
        "wall_s": time.perf_counter() - start,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
