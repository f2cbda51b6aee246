"""World-model SFT (reference §8), read top to bottom: config, data, model, loop, checkpoints, metrics.

    python -m spa_trainer.sft --model tiny --input jsonl:rows.jsonl --epochs 5 --out runs/sft

Defaults are the paper-faithful recipe of reference §8.3 (AdamW lr 1e-4, betas (0.9, 0.95),
wd 0.01, cosine with 10% warmup, grad clip 1.0, global batch 16 of micro-batches of 1, max
length 2048, 5 epochs, bf16 autocast on CUDA). `--released-masking` trains SPA's released
placeholder variant (§8.2); `--mask-transitions` is the prediction-masking ablation.
Re-running the same command with the same `--out` resumes from the latest checkpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_cosine_schedule_with_warmup
from transformers.utils import logging as hf_logging

from .checkpoint import TrainerState, latest_checkpoint, restore_checkpoint, save_checkpoint
from .data import Offsets, RowSource, SftRow, SourcedRow, open_source
from .masking import OBS_PLACEHOLDER, Example, add_released_placeholders, encode_faithful, encode_released
from .models import load_policy, pick_device
from .sft_metrics import evaluate


@dataclass
class SftConfig:
    """Hyperparameters (reference §8.2/§8.3) and run options."""

    model: str = "tiny"
    input: str = ""
    out: str = "runs/sft"
    epochs: int = 5
    batch_size: int = 16  # rows per optimizer step (SPA: global batch 16, micro-batch 1)
    lr: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_length: int = 2048
    val_fraction: float = 0.2  # held out by trajectory id, so no trajectory straddles the split
    val_input: str | None = None  # a separate held-out source instead of the split
    released_masking: bool = False
    mask_transitions: bool = False
    checkpoint_every: int = 50  # optimizer steps; one more at the end of every epoch
    max_steps: int | None = None  # stop (with a checkpoint) after this global step
    eval_rows: int = 32  # rows for greedy next-state exact match
    seed: int = 0
    brokers: str | None = None
    export_dir: str | None = None  # after training: ONNX artifact under <export_dir>/v<n>/
    publish_topic: str | None = None  # and a PolicyUpdate on this topic (e.g. spa.policy)
    extra: dict[str, object] = field(default_factory=dict)


StepHook = Callable[[int, list[SourcedRow], float], None]
"""Called after every optimizer step with (global step, rows trained in it, loss)."""


def is_held_out(row: SftRow, fraction: float) -> bool:
    """Deterministic split on a hash of the trajectory id (reference §6 splits rows at random,
    which leaks turns of one trajectory into both sides; we keep trajectories whole)."""
    key = row.trajectory_id or json.dumps(row.messages()[:2], sort_keys=True)
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64
    return bucket < fraction


def make_encoder(cfg: SftConfig, tokenizer: PreTrainedTokenizerBase) -> Callable[[SftRow], Example]:
    """The row → example function for the configured masking variant."""
    if cfg.released_masking:
        return lambda row: encode_released(tokenizer, row, cfg.max_length)
    return lambda row: encode_faithful(
        tokenizer, row, cfg.max_length, mask_transitions=cfg.mask_transitions or row.mask_transitions
    )


def scan_range(source: RowSource, start: Offsets, end: Offsets, cfg: SftConfig) -> tuple[int, list[SftRow]]:
    """One pass over the epoch range: (number of training rows, held-out rows)."""
    n_train, held_out = 0, []
    for sourced in source.read(start, end):
        if cfg.val_input is None and is_held_out(sourced.row, cfg.val_fraction):
            held_out.append(sourced.row)
        else:
            n_train += 1
    if cfg.val_input is not None:
        val_source = open_source(cfg.val_input, brokers=cfg.brokers)
        held_out = [s.row for s in val_source.read({}, val_source.end_offsets())]
    return n_train, held_out


def step_tracer() -> Any:
    """The trainer's OTLP tracer (infra/otel/python/spa_otlp.py, stdlib only; infra/otel/README.md)
    when OTEL_EXPORTER_OTLP_ENDPOINT is set, else None. Loaded from the repository by path: it is
    shared with tools outside this package."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return None
    path = Path(__file__).resolve().parents[2] / "infra" / "otel" / "python" / "spa_otlp.py"
    spec = importlib.util.spec_from_file_location("spa_otlp", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but {path} cannot be loaded")
    module = sys.modules.setdefault("spa_otlp", importlib.util.module_from_spec(spec))  # dataclasses look it up
    spec.loader.exec_module(module)
    return module.tracer_from_env("spa-trainer")


def train_step(
    model: PreTrainedModel,
    batch: list[Example],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    cfg: SftConfig,
) -> tuple[float, float]:
    """One optimizer step over micro-batches of one row; loss normalised as SPA (per micro-batch
    token mean, divided by the number of micro-batches, reference §8.2). Returns (loss, grad norm)."""
    device = next(model.parameters()).device
    model.train()
    optimizer.zero_grad(set_to_none=True)
    usable = [ex for ex in batch if any(t != -100 for t in ex.labels[1:])]
    total = 0.0
    for ex in usable:
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()
        with autocast:
            out = model(
                input_ids=torch.tensor([ex.input_ids], device=device),
                labels=torch.tensor([ex.labels], device=device),
            )
        (out.loss / len(usable)).backward()
        total += float(out.loss.detach()) / len(usable)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
    if math.isfinite(grad_norm):  # SPA skips the update on a non-finite grad norm
        optimizer.step()
    scheduler.step()
    return total, grad_norm


def batches(
    source: RowSource, start: Offsets, end: Offsets, cfg: SftConfig
) -> Iterator[tuple[list[SourcedRow], Offsets]]:
    """Training batches of one epoch's range with the offsets to resume from after each.

    Held-out rows are read and skipped (their offsets advance too); the last batch may be short.
    """
    pending: list[SourcedRow] = []
    next_offsets = dict(start)
    for sourced in source.read(start, end):
        next_offsets[sourced.partition] = sourced.offset + 1
        if cfg.val_input is None and is_held_out(sourced.row, cfg.val_fraction):
            continue
        pending.append(sourced)
        if len(pending) == cfg.batch_size:
            yield pending, dict(next_offsets)
            pending = []
    if pending:
        yield pending, dict(next_offsets)


@dataclass
class SftRun:
    """Everything a run holds: source, model, optimizer, schedule, position, held-out rows."""

    source: RowSource
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    model_dir: Path
    encode: Callable[[SftRow], Example]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    state: TrainerState
    held_out: list[SftRow]


def prepare_run(cfg: SftConfig, out: Path) -> SftRun:
    """Fresh start, or resume from `<out>`'s latest checkpoint (model, optimizer, schedule, RNG,
    offsets and the epoch range all come from it)."""
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    source = open_source(cfg.input, brokers=cfg.brokers)
    resume = latest_checkpoint(out)
    # the checkpoint's model/ is a normal HF folder
    model, tokenizer, model_dir = load_policy(str(resume / "model") if resume else cfg.model, pick_device())
    if cfg.released_masking and OBS_PLACEHOLDER not in tokenizer.get_vocab():
        add_released_placeholders(tokenizer, model)
    # the range is fixed at the first start (reference §8.2: epochs over a fixed dataset)
    state = TrainerState(source=source.describe(), extra={"config": asdict(cfg)})
    if resume is None:
        state.range_end = source.end_offsets()
        state.range_start = {p: 0 for p in state.range_end}
    else:
        state = TrainerState.from_json(json.loads((resume / "trainer_state.json").read_text()))
    n_train, held_out = scan_range(source, state.range_start, state.range_end, cfg)
    if n_train == 0:
        raise ValueError(f"no training rows in {source.describe()} range {state.range_start}..{state.range_end}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    total_steps = state.total_steps or math.ceil(n_train / cfg.batch_size) * cfg.epochs
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * total_steps), total_steps)
    if resume is not None:
        state = restore_checkpoint(resume, optimizer, scheduler)
        print(f"[sft] resumed {resume.name}: epoch {state.epoch} step {state.step} offsets {state.offsets}")
    state.total_steps = total_steps
    print(
        f"[sft] {source.describe()}: {n_train} train rows, {len(held_out)} held out; "
        f"{total_steps} steps over {cfg.epochs} epochs on {pick_device()}",
        flush=True,
    )
    encode = make_encoder(cfg, tokenizer)
    return SftRun(source, model, tokenizer, model_dir, encode, optimizer, scheduler, state, held_out)


def run_sft(cfg: SftConfig, on_step: StepHook | None = None) -> dict[str, object]:
    """Train (or resume) and evaluate; returns the final metrics dict (also in `<out>/metrics.json`)."""
    hf_logging.disable_progress_bar()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    run = prepare_run(cfg, out)
    state = run.state

    def checkpoint() -> None:
        save_checkpoint(out, run.model, run.tokenizer, run.optimizer, run.scheduler, state)
        commit = getattr(run.source, "commit", None)
        if commit is not None:  # Kafka: offsets reach the group only with a checkpoint
            commit(state.offsets or state.range_end)

    stopped = False
    tracer, topic = step_tracer(), run.source.describe().split(":", 1)[-1]
    while state.epoch < cfg.epochs and not stopped:
        for rows, next_offsets in batches(run.source, state.offsets or state.range_start, state.range_end, cfg):
            t0 = time.perf_counter()
            examples = [run.encode(r.row) for r in rows]
            # A `train step N` span, linked to the rows' traceparents where the source keeps headers.
            records = [(topic, getattr(r, "headers", None)) for r in rows]
            with tracer.traced_step(state.step + 1, records, "sft") if tracer else contextlib.nullcontext():
                loss, grad_norm = train_step(run.model, examples, run.optimizer, run.scheduler, cfg)
            state.step += 1
            state.rows_trained += len(rows)
            state.offsets = next_offsets
            if on_step is not None:
                on_step(state.step, rows, loss)
            tokens = sum(len(e.input_ids) for e in examples)
            print(
                f"[sft] epoch {state.epoch} step {state.step}/{state.total_steps} loss {loss:.4f} "
                f"grad {grad_norm:.3f} lr {run.scheduler.get_last_lr()[0]:.2e} "
                f"tok/s {tokens / (time.perf_counter() - t0):.0f}",
                flush=True,
            )
            if cfg.max_steps is not None and state.step >= cfg.max_steps:
                stopped = True
                break
            if state.step % cfg.checkpoint_every == 0:
                checkpoint()
        if not stopped:
            state.epoch += 1
            state.offsets = {}
        checkpoint()  # end of epoch (SPA saves every epoch) or the requested stop

    metrics = evaluate(run.model, run.tokenizer, run.held_out, run.encode, cfg.eval_rows)
    result = {
        "step": state.step,
        "epoch": state.epoch,
        "rows_trained": state.rows_trained,
        "model_dir": str(run.model_dir),
        **asdict(metrics),
    }
    (out / "metrics.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"[sft] metrics {json.dumps(result)}", flush=True)
    if cfg.export_dir and not stopped:
        publish_artifact(cfg, latest_checkpoint(out), state.step)
    return result


def publish_artifact(cfg: SftConfig, checkpoint_dir: Path | None, step: int) -> Path:
    """Export the final SFT policy to ONNX (and announce it on `publish_topic` if set)."""
    from .export import export_policy

    if checkpoint_dir is None:
        raise FileNotFoundError(f"no checkpoint in {cfg.out} to export")
    artifact = export_policy(checkpoint_dir / "model", Path(cfg.export_dir or ""), "sft", step, cfg.model)
    print(f"[sft] exported {artifact}", flush=True)
    if cfg.publish_topic:
        from .policy_publish import policy_update_from_manifest, publish_policy_update

        publish_policy_update(policy_update_from_manifest(artifact), cfg.publish_topic, cfg.brokers)
        print(f"[sft] published {artifact.name} to {cfg.publish_topic}", flush=True)
    return artifact


def parse_args(argv: list[str]) -> SftConfig:
    """CLI flags → SftConfig."""
    d = SftConfig()
    p = argparse.ArgumentParser(prog="python -m spa_trainer.sft", description=__doc__.split("\n")[0])
    p.add_argument("--model", default=d.model, help="'tiny' or a local HF causal-LM folder")
    p.add_argument("--input", required=True, help="jsonl:<path> or kafka:<topic>")
    p.add_argument("--out", default=d.out, help="run folder (checkpoints, metrics); resumes if present")
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--max-length", type=int, default=d.max_length)
    p.add_argument("--val-fraction", type=float, default=d.val_fraction)
    p.add_argument("--val-input", default=None, help="separate held-out source (jsonl:/kafka:)")
    p.add_argument("--released-masking", action="store_true", help="SPA's released placeholder variant (§8.2)")
    p.add_argument("--mask-transitions", action="store_true", help="exclude <prediction> contents from the loss")
    p.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--eval-rows", type=int, default=d.eval_rows)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--brokers", default=None, help="Kafka bootstrap servers (default $KAFKA_BROKERS)")
    p.add_argument("--export", default=None, metavar="DIR", help="export ONNX to DIR/v<n>/ after training")
    p.add_argument("--publish", default=None, metavar="TOPIC", help="publish a PolicyUpdate (needs --export)")
    a = p.parse_args(argv)
    if a.publish and not a.export:
        p.error("--publish needs --export DIR (the PolicyUpdate points at the exported artifact)")
    return SftConfig(
        model=a.model,
        input=a.input,
        out=a.out,
        epochs=a.epochs,
        batch_size=a.batch_size,
        lr=a.lr,
        max_length=a.max_length,
        val_fraction=a.val_fraction,
        val_input=a.val_input,
        released_masking=a.released_masking,
        mask_transitions=a.mask_transitions,
        checkpoint_every=a.checkpoint_every,
        max_steps=a.max_steps,
        eval_rows=a.eval_rows,
        seed=a.seed,
        brokers=a.brokers,
        export_dir=a.export,
        publish_topic=a.publish,
    )


if __name__ == "__main__":
    run_sft(parse_args(sys.argv[1:]))
