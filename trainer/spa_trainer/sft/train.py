"""World-model SFT (docs/spa-sft.md), read top to bottom: data, model, loop, checkpoints, metrics (settings: config.py).

    python -m spa_trainer.sft --model tiny --input jsonl:rows.jsonl --epochs 5 --out runs/sft

Defaults are the paper-faithful recipe (docs/spa-sft.md#target: AdamW lr 1e-4, betas (0.9, 0.95),
wd 0.01, cosine with 10% warmup, grad clip 1.0, global batch 16 of micro-batches of 1, max
length 2048, 5 epochs, bf16 autocast on CUDA); the training rows are reshuffled every epoch.
`--released-masking` trains SPA's released placeholder variant; `--mask-transitions` is the
paper's masking ablation (both states out of the loss), `--mask-predictions` masks the next
state only (docs/spa-sft.md#masking). `--decision-weight W` weighs the target tokens outside the
states (thoughts, tags, answer) W in each row's loss (docs/spa-sft.md#weights; default 1, SPA's).
The final metrics (and the exported version) go to `<out>/metrics.json`. Re-running the same
command with the same `--out` resumes from the latest checkpoint. `torchrun --nproc_per_node N -m
spa_trainer.sft ...` trains data-parallel: every rank reads the same range and trains its share of
every global batch (trainer/README.md, "Data-parallel training"); rank 0 alone logs, checkpoints,
evaluates and exports.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_cosine_schedule_with_warmup
from transformers.utils import logging as hf_logging

from ..cli.errors import exit_code
from ..data.sft_rows import BadRow, RowSource, SftRow, SourcedRow
from ..json_files import dumps, write_json
from ..models.load import load_policy
from ..otlp import OtlpJsonTracer, tracer_from_env
from ..progress import PhaseProgress, StepsLeft
from ..storage import remove_stale_temp_folders
from ..topics.dead_letters import DeadLetters, open_dead_letters
from ..topics.sources import open_source
from ..training.checkpoint import TrainerState, latest_checkpoint, restore_checkpoint, save_checkpoint
from ..training.data_parallel import (
    Ranks,
    accumulating,
    data_parallel,
    dp_scale,
    from_main,
    gather_to_all,
    join_ranks,
    leave,
    share,
    single,
    sum_over_ranks,
)
from ..training.reporting import Reporter, open_reporter
from .config import SftConfig, parse_args
from .masking import (
    IGNORE_INDEX,
    OBS_PLACEHOLDER,
    Example,
    StateMask,
    add_released_placeholders,
    encode_faithful_rows,
    encode_released,
    weighted_token_mean,
)
from .metrics import evaluate
from .run_files import exported_version, finished_before, keep_step_lines, publish_artifact
from .sampler import read_range, remaining_batches

StepHook = Callable[[int, list[SourcedRow], float], None]
"""Called after every optimizer step with (global step, rows of its global batch, loss)."""


def state_mask(cfg: SftConfig, row: SftRow) -> StateMask:
    """The masking ablation for `row`: a row flagged `mask_transitions` (spa generate
    --mask-transitions) masks both states like the flag does (docs/spa-sft.md#masking)."""
    if cfg.mask_transitions or row.mask_transitions:
        return "transitions"
    return "predictions" if cfg.mask_predictions else "none"


def make_rows_encoder(
    cfg: SftConfig, tokenizer: PreTrainedTokenizerBase
) -> Callable[[Sequence[SftRow]], list[Example]]:
    """The rows → examples function for the configured masking variant (faithful rows are
    tokenized together, `masking.encode_pairs`)."""
    if cfg.released_masking:  # no state contents in its target: the weights do not apply (all 1)
        return lambda rows: [encode_released(tokenizer, row, cfg.max_length) for row in rows]
    return lambda rows: encode_faithful_rows(
        tokenizer, rows, cfg.max_length, [state_mask(cfg, row) for row in rows], cfg.decision_weight
    )


def make_encoder(cfg: SftConfig, tokenizer: PreTrainedTokenizerBase) -> Callable[[SftRow], Example]:
    """The row → example function for the configured masking variant."""
    encode = make_rows_encoder(cfg, tokenizer)
    return lambda row: encode([row])[0]


@dataclass(frozen=True)
class Encoded:
    """A training example as the step reads it: ids and labels as int32 tensors, 4 bytes a token
    (a list of Python ints takes 8 to 36, and a run keeps every training row encoded: SPA's full
    size is ~6,400 rows); the loss weights (`--decision-weight`) as float32, only when the example
    has any (None: every trained token weighs 1, no memory)."""

    input_ids: torch.Tensor
    labels: torch.Tensor
    weights: torch.Tensor | None = None

    @staticmethod
    def of(example: Example) -> Encoded:
        weights = torch.tensor(example.weights, dtype=torch.float32) if example.weights is not None else None
        return Encoded(
            torch.tensor(example.input_ids, dtype=torch.int32),
            torch.tensor(example.labels, dtype=torch.int32),
            weights,
        )

    @property
    def trainable(self) -> bool:
        """Does any position after the first hold a target token (a row cut to the window may have none)?"""
        return bool((self.labels[1:] != IGNORE_INDEX).any())


TrainingRow = tuple[SourcedRow, Encoded]
"""A training row and its example, encoded once when the run reads its range (`encode_rows`)."""


def encode_rows(
    rows: list[SourcedRow],
    encode: Callable[[Sequence[SftRow]], list[Example]],
    progress: bool = False,
    chunk: int = 512,
) -> list[TrainingRow]:
    """Every training row with its example, encoded before training as TRL tokenizes its dataset:
    the step does not wait for the tokenizer (a tenth of a step on tiny-cells), and no epoch after
    the first encodes a row again. `chunk` rows go to the tokenizer together. With `progress`, a
    line every 10 s (the default warm-up's 23,500 rows take about 22 s)."""
    counter = PhaseProgress("sft", "encoding the training rows", total=len(rows)) if progress else None
    encoded: list[TrainingRow] = []
    for at in range(0, len(rows), chunk):
        part = rows[at : at + chunk]
        encoded += [(sourced, Encoded.of(ex)) for sourced, ex in zip(part, encode([s.row for s in part]), strict=True)]
        if counter is not None:
            counter.count(len(encoded))
    return encoded


def row_losses(model: torch.nn.Module, examples: list[Encoded], device: torch.device) -> torch.Tensor:
    """Each example's mean loss over its target tokens (the causal-LM loss of a micro-batch of one
    row, docs/spa-sft.md#target), from one forward pass of all of them. An example with weights
    (`--decision-weight`) has its weighted mean instead, Σ w·nll / Σ w over its target tokens
    (docs/spa-sft.md#weights); without (W = 1) the plain mean, computed as always. Rows are
    right-padded: a causal model's real tokens never attend to the pads after them and keep their
    positions, so each row's loss is the one it would have alone (up to float rounding).

    Only the positions that predict a target token of some row go through the LM head
    (`logits_to_keep`, as TRL's `chunked_nll`): the logits of prompt positions are never used, and
    on a world-model row most positions are prompt (tiny-cells, 512-token window: 35 % of the
    positions are targets, and a step takes 10-20 % less time than with full logits). The same
    numbers as full logits up to float rounding (tests/test_sft_step.py)."""
    width = max(len(ex.input_ids) for ex in examples)
    ids = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    weighted = any(ex.weights is not None for ex in examples)
    weights = torch.ones((len(examples), width), dtype=torch.float32) if weighted else None
    for i, ex in enumerate(examples):
        ids[i, : len(ex.input_ids)] = ex.input_ids
        labels[i, : len(ex.labels)] = ex.labels
        attention[i, : len(ex.input_ids)] = 1
        if weights is not None and ex.weights is not None:
            weights[i, : len(ex.weights)] = ex.weights
    targets = labels[:, 1:]  # the logits at position i predict the token at i + 1
    kept = (targets != IGNORE_INDEX).any(dim=0).nonzero().squeeze(1)
    targets = targets[:, kept].to(device)
    ids, attention = ids.to(device), attention.to(device)
    logits = model(input_ids=ids, attention_mask=attention, logits_to_keep=kept.to(device)).logits.float()
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX, reduction="none"
    ).view(targets.shape)
    if weights is None:
        return nll.sum(dim=1) / (targets != IGNORE_INDEX).sum(dim=1)
    return weighted_token_mean(nll, targets, weights[:, 1:][:, kept].to(device))


def train_step(
    model: torch.nn.Module,
    batch: list[Encoded],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    cfg: SftConfig,
    ranks: Ranks | None = None,
) -> tuple[float, float]:
    """One optimizer step; loss normalised as SPA (each row's target-token mean, divided by the
    number of rows, docs/spa-sft.md#target), the rows run `cfg.micro_batch_size` to a forward pass
    (SPA: 1). Returns (loss, grad norm).

    Data-parallel, `batch` is this rank's share of the global batch and `model` its DDP wrapper:
    the divisor is the global number of rows and the loss is scaled by the world size, so DDP's
    average of the ranks' gradients is the single-process gradient."""
    ranks = ranks or single()
    device = next(model.parameters()).device
    model.train()
    optimizer.zero_grad(set_to_none=True)
    usable = [ex for ex in batch if ex.trainable]
    [count] = sum_over_ranks([len(usable)], ranks)
    size = cfg.micro_batch_size
    micro_batches = [usable[i : i + size] for i in range(0, len(usable), size)]
    total = 0.0
    for i, micro in enumerate(micro_batches):
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()
        with accumulating(model, last=i == len(micro_batches) - 1):
            with autocast:
                losses = row_losses(model, micro, device)
            (losses.sum() * dp_scale(ranks) / count).backward()
        total += float(losses.detach().sum()) / count
    if count and not usable:  # an empty share still joins the ranks' gradient all-reduce, with zeros
        out = model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=device))
        (out.logits.sum() * 0.0).backward()
    [total] = sum_over_ranks([total], ranks)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
    if math.isfinite(grad_norm):  # SPA skips the update on a non-finite grad norm
        optimizer.step()
    scheduler.step()
    return total, grad_norm


@dataclass
class SftRun:
    """Everything a run holds: source, model, optimizer, schedule, position, training and held-out rows."""

    source: RowSource
    model: PreTrainedModel  # the weights (saved, evaluated, exported)
    trained: torch.nn.Module  # what the steps call: `model`, or its DDP wrapper under torchrun
    ranks: Ranks
    tokenizer: PreTrainedTokenizerBase
    model_dir: Path
    encode: Callable[[SftRow], Example]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    state: TrainerState
    train_rows: list[TrainingRow]  # in the run's row order (state.row_order), each with its example
    held_out: list[SftRow]
    end_step: int  # the schedule's last step, or the --max-steps budget when smaller
    reporter: Reporter = field(default_factory=Reporter)  # TensorBoard / W&B (--report-to), rank 0's
    steps_left: StepsLeft = field(default_factory=lambda: StepsLeft(0, 0))  # time left, set when training starts


def read_rows(cfg: SftConfig, source: RowSource, state: TrainerState) -> tuple[list[SourcedRow], list[SftRow]]:
    """(training rows, held-out rows) of the run's range; held out by puzzle unless `--val-input`."""
    rows = read_range(
        source,
        state.range_start,
        state.range_end,
        cfg.val_fraction,
        split=cfg.val_input is None,
        canonical=state.row_order == "content",
    )
    if cfg.val_input is None:
        return rows.train, rows.held_out
    val_source = open_source(cfg.val_input, brokers=cfg.brokers)
    return rows.train, [s.row for s in val_source.read({}, val_source.end_offsets())]


def skip_bad_rows_of(cfg: SftConfig, source: RowSource, out: Path, ranks: Ranks) -> DeadLetters | None:
    """Sends the source's undecodable rows to the dead letters (`--dlq`; default the input's own
    kind: kafka:spa.dlq or jsonl:<out>/dlq.jsonl), with a line each, instead of stopping. Every
    rank reads the same rows: rank 0 alone writes the dead letters, the others skip them quietly."""
    if not ranks.main:
        source.on_bad_row = lambda _bad: None
        return None
    default = "kafka:spa.dlq" if cfg.input.startswith("kafka:") else f"jsonl:{out / 'dlq.jsonl'}"
    target = cfg.dlq or default
    dead_letters = open_dead_letters(target, brokers=cfg.brokers)

    def skip(bad: BadRow) -> None:
        dead_letters.reject(bad, source.describe())
        print(f"[sft] skipped {bad.args[0].split(' (--skip-bad-rows')[0]} → {target}", file=sys.stderr, flush=True)

    source.on_bad_row = skip
    return dead_letters


def prepare_run(cfg: SftConfig, out: Path, ranks: Ranks) -> SftRun:
    """Fresh start, or resume from `<out>`'s latest checkpoint (model, optimizer, schedule, RNG,
    epoch position, shuffle seed and the offset range all come from it). Every rank prepares the
    same run: rank 0 decides the checkpoint and, on a fresh start, the range's end."""
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    source = open_source(cfg.input, brokers=cfg.brokers)
    dead_letters = skip_bad_rows_of(cfg, source, out, ranks) if cfg.skip_bad_rows else None
    if ranks.main:
        remove_stale_temp_folders(out, "sft")
    resume = from_main(latest_checkpoint(out) if ranks.main else None, ranks)
    # the checkpoint's model/ is a normal HF folder
    model, tokenizer, model_dir = load_policy(str(resume / "model") if resume else cfg.model, ranks.device)
    if cfg.released_masking and OBS_PLACEHOLDER not in tokenizer.get_vocab():
        add_released_placeholders(tokenizer, model)
    # the range is fixed at the first start (SPA trains epochs over a fixed dataset)
    state = TrainerState(
        source=source.describe(), shuffle_seed=cfg.seed, row_order="content", extra={"config": asdict(cfg)}
    )
    if resume is None:
        state.range_end = from_main(source.end_offsets() if ranks.main else {}, ranks)
        state.range_start = {p: 0 for p in state.range_end}
    else:
        state = TrainerState.from_json(json.loads((resume / "trainer_state.json").read_text()))
    train_rows, held_out = read_rows(cfg, source, state)
    if dead_letters is not None:
        dead_letters.flush()
    if not train_rows:
        raise ValueError(f"no training rows in {source.describe()} range {state.range_start}..{state.range_end}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    total_steps = state.total_steps or math.ceil(len(train_rows) / cfg.batch_size) * cfg.epochs
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * total_steps), total_steps)
    if resume is not None:
        state = restore_checkpoint(resume, optimizer, scheduler)
        if ranks.main:
            print(f"[sft] resumed {resume.name}: epoch {state.epoch} (row {state.epoch_rows}) step {state.step}"
                  + (f"; written by {state.world_size} ranks, continuing with {ranks.world_size} (the global "
                     "batches do not depend on it)" if state.world_size != ranks.world_size else ""))  # fmt: skip
    if ranks.main:
        keep_step_lines(out, state.step)
    state.total_steps = total_steps
    state.world_size = ranks.world_size
    # --max-steps ends training early without changing the schedule, as SPA's total_training_steps
    end_step = min(total_steps, cfg.max_steps) if cfg.max_steps is not None else total_steps
    if ranks.main:
        where = f"{ranks.world_size} ranks on {ranks.device.type}" if ranks.parallel else str(ranks.device)
        print(
            f"[sft] {source.describe()}: {len(train_rows)} train rows, {len(held_out)} held out; "
            f"{end_step} of {total_steps} steps over {cfg.epochs} epochs on {where}",
            flush=True,
        )
    encode = make_encoder(cfg, tokenizer)
    trained = data_parallel(model, ranks)
    return SftRun(
        source, model, trained, ranks, tokenizer, model_dir, encode, optimizer, scheduler, state,
        encode_rows(train_rows, make_rows_encoder(cfg, tokenizer), progress=ranks.main), held_out, end_step,
    )  # fmt: skip


def checkpoint(run: SftRun, out: Path) -> None:
    """Save a checkpoint; once every row of the range has been trained (one epoch done), the
    range's end is committed to the Kafka group too, only after the checkpoint is on disk. Every
    rank stands at the same place of the same global order, so rank 0's checkpoint holds every
    rank's position (and the world size); the other ranks write nothing."""
    state = run.state
    if not run.ranks.main:
        return
    state.offsets = dict(state.range_end) if state.epoch > 0 else {}
    save_checkpoint(out, run.model, run.tokenizer, run.optimizer, run.scheduler, state)
    run.source.commit(state.offsets)


def run_step(
    run: SftRun,
    batch: list[TrainingRow],
    cfg: SftConfig,
    out: Path,
    tracer: OtlpJsonTracer | None,
    on_step: StepHook | None,
) -> None:
    """One optimizer step on the global batch (this rank trains its share), traced and logged;
    advances the run's position. Rank 0 appends the step to `<out>/steps.jsonl`."""
    state, ranks = run.state, run.ranks
    t0 = time.perf_counter()
    rows = [sourced for sourced, _ in batch]
    mine = share(batch, ranks)
    examples = [example for _, example in mine]
    # A `train step N` span, linked to the rows' traceparents (infra/otel/README.md).
    topic = run.source.describe().split(":", 1)[-1]
    records = [(topic, r.headers) for r in rows]
    with tracer.traced_step(state.step + 1, records, "sft") if tracer else contextlib.nullcontext():
        loss, grad_norm = train_step(run.trained, examples, run.optimizer, run.scheduler, cfg, ranks)
    trained_by_rank = gather_to_all([[r.partition, r.offset] for r, _ in mine], ranks)
    epoch = state.epoch
    state.step += 1
    state.rows_trained += len(rows)
    state.epoch_rows += len(rows)
    if on_step is not None:
        on_step(state.step, rows, loss)
    if not ranks.main:
        return
    lr = run.scheduler.get_last_lr()[0]
    line = {"step": state.step, "epoch": epoch, "loss": loss, "grad_norm": grad_norm, "lr": lr}
    with (out / "steps.jsonl").open("a", encoding="utf-8") as f:
        f.write(dumps({**line, "rows_by_rank": trained_by_rank}) + "\n")
    tokens = sum(len(e.input_ids) for e in examples) * ranks.world_size  # rank 0's share, times the ranks
    tokens_per_s = tokens / (time.perf_counter() - t0)
    # TRL's names; its `epoch` is fractional too (epochs done, rows of this one counted in)
    fraction = epoch + state.epoch_rows / len(run.train_rows) if state.epoch == epoch else float(state.epoch)
    run.reporter.log(
        {"train/loss": loss, "train/grad_norm": grad_norm, "train/learning_rate": float(lr), "train/epoch": fraction,
         "perf/tokens_per_s": tokens_per_s},
        state.step,
    )  # fmt: skip
    if state.step % cfg.log_every == 0 or state.step in (1, run.end_step):
        print(
            f"[sft] epoch {state.epoch} step {state.step}/{run.end_step} loss {loss:.4f} "
            f"grad {grad_norm:.3f} lr {lr:.2e} tok/s {tokens_per_s:.0f}{run.steps_left.text(state.step)}",
            flush=True,
        )


def train(run: SftRun, cfg: SftConfig, out: Path, on_step: StepHook | None) -> bool:
    """Train from the run's position to its end step, or stop at `--stop-after-steps`.

    Every epoch visits the training rows in its own permutation (docs/spa-sft.md#sampler).
    Checkpoints every `checkpoint_every` steps, at the end of every epoch (SPA saves every epoch)
    and at the last step. Returns True when training reached its end step.
    """
    state, tracer = run.state, tracer_from_env("spa-trainer") if run.ranks.main else None
    stop_at = run.end_step if cfg.stop_after_steps is None else min(run.end_step, cfg.stop_after_steps)
    run.steps_left = StepsLeft(state.step, stop_at)
    while state.step < stop_at:
        epoch = remaining_batches(run.train_rows, state.shuffle_seed, state.epoch, state.epoch_rows, cfg.batch_size)
        for batch in epoch:
            run_step(run, batch, cfg, out, tracer, on_step)
            if state.epoch_rows == len(run.train_rows):
                state.epoch, state.epoch_rows = state.epoch + 1, 0
                checkpoint(run, out)
            elif state.step == stop_at or state.step % cfg.checkpoint_every == 0:
                checkpoint(run, out)
            if state.step == stop_at:
                break
    return state.step >= run.end_step


def run_sft(cfg: SftConfig, on_step: StepHook | None = None) -> dict[str, object]:
    """Train (or resume), evaluate and export; returns the final metrics, also written to
    `<out>/metrics.json` (strict JSON: a metric without data is null). After an interruption
    (`stop_after_steps`) the file says `"finished": false` and holds the position only."""
    if cfg.mask_transitions and cfg.mask_predictions:
        raise ValueError("mask_transitions masks both states already; mask_predictions is its next-state-only variant")
    if not (math.isfinite(cfg.decision_weight) and cfg.decision_weight > 0):
        raise ValueError(f"decision_weight must be a finite number > 0, got {cfg.decision_weight}")
    hf_logging.disable_progress_bar()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ranks = join_ranks()  # torchrun's rank, or the single process
    together = False
    try:
        run = prepare_run(cfg, out, ranks)
        if ranks.main:  # a resume purges the TensorBoard steps it trains again, as keep_step_lines does
            run.reporter = open_reporter(
                cfg.report_to, out=out, logging_dir=cfg.logging_dir, run_name=cfg.run_name,
                config=asdict(cfg), purge_step=run.state.step + 1 if run.state.step else None,
            )  # fmt: skip
        try:
            finished = train(run, cfg, out, on_step)
        except BaseException:
            run.reporter.close()  # what was logged stays readable (W&B writes its run file at the end)
            raise
        finally:
            run.trained = run.model  # the DDP wrapper goes before the process group (data_parallel.leave)
        together = True
    finally:
        leave(ranks, together)  # the last collective: evaluation and export are rank 0's alone
    try:
        return finish(run, cfg, out, finished)
    finally:
        run.reporter.close()


def finish(run: SftRun, cfg: SftConfig, out: Path, finished: bool) -> dict[str, object]:
    """After training: evaluate and export (rank 0, a finished run), write metrics.json."""
    state, ranks = run.state, run.ranks
    position: dict[str, object] = {
        "finished": finished,
        "step": state.step,
        "epoch": state.epoch,
        "rows_trained": state.rows_trained,
    }
    if not ranks.main:
        return position
    if not finished:
        write_json(out / "metrics.json", position)
        print(f"[sft] stopped after step {state.step} (--stop-after-steps); the same command without it resumes")
        return position
    earlier = finished_before(out, state.step)
    metrics = evaluate(run.model, run.tokenizer, run.held_out, run.encode, cfg.eval_rows, window=cfg.max_length)
    artifact = publish_artifact(cfg, latest_checkpoint(out), state.step, earlier) if cfg.export else None
    result = {
        **position,
        "model_dir": str(run.model_dir),
        "decision_weight": cfg.decision_weight,  # val_loss is the objective trained: weighted when ≠ 1
        **asdict(metrics),
        "exported_version": exported_version(artifact),
        "artifact": str(artifact) if artifact else None,
        "published_to": cfg.publish if artifact else None,
    }
    write_json(out / "metrics.json", result)
    # TRL's `eval/loss`; the world-model metrics beside it under their metrics.json names
    scored = {f"eval/{k}": v for k, v in asdict(metrics).items() if type(v) in (int, float) and k != "val_loss"}
    run.reporter.log({"eval/loss": metrics.val_loss, **scored}, state.step)
    print(f"[sft] metrics {dumps(result)}", flush=True)
    return result


def main(argv: list[str]) -> int:
    """Run SFT; boundary errors (missing input, a bad row, no broker, a stalled topic) print one
    line and exit 2. Anything else is a bug and keeps its traceback."""
    cfg = parse_args(argv)
    return exit_code("sft", lambda: run_sft(cfg))
