"""PPO as a service (docs/spa-ppo.md): consume spa.rollouts, train, checkpoint with offsets, publish.

    python -m spa_trainer.ppo_service --model runs/sft --input kafka:spa.rollouts --out runs/ppo \\
        --steps 100 --groups-per-step 32 --group-size 8 --export-every 10 --export-root runs/policy \\
        --publish spa.policy

One loop, top to bottom, per step:
    poll records (offset order) ─► reject bad ones to the DLQ ─► group by `group_id` until G groups
    of K are complete ─► `ppo_step` ─► metrics line ─► atomic checkpoint (actor, critic, both
    optimizers, RNG, trainer version, next offsets + read-but-untrained records) ─► commit the
    offsets below which everything is trained ─► every M steps (and at the end): ONNX export
    `v<version>` and a PolicyUpdate on `--publish`.

The trainer's version (for staleness) is the latest published one: `--start-version` (the SFT
export's; default the highest `v<n>` under `--export-root`) + 1 per export. Re-running the same
command resumes from `<out>/checkpoints/latest`: the same records, none skipped or repeated.

`torchrun --nproc_per_node N -m spa_trainer.ppo_service ...` trains data-parallel: rank 0 runs this
loop and hands each step's records to the other ranks, every rank trains its share of the
micro-batches (`ppo.update`), and rank 0 alone dead-letters, checkpoints, commits, exports and
publishes (trainer/README.md, "Data-parallel training").
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from ..cli.errors import (
    exit_code,
)
from ..data.records import Offsets
from ..data.rollouts import RolloutSource, SourcedRollout
from ..export import export_policy, next_version
from ..json_files import dumps
from ..models.load import load_policy, resolve_model_dir
from ..otlp import OtlpJsonTracer, tracer_from_env
from ..progress import StepsLeft
from ..storage import remove_stale_temp_folders
from ..topics.dead_letters import DeadLetters, open_dead_letters
from ..topics.sources import open_rollout_source
from ..training.checkpoint import latest_checkpoint
from ..training.data_parallel import Ranks, from_main, join_ranks, leave, single
from ..training.reporting import Reporter, open_reporter
from .batch import Rollout
from .checkpoint import (
    Progress,
    read_pending,
    read_progress,
    read_trained_groups,
    restore_training_state,
    write_ppo_checkpoint,
    write_progress_file,
)
from .config import ServiceConfig, parse_args
from .groups import GroupBuffer
from .step import PpoState, init_ppo, ppo_step

WAITING_NOTE_S = 10.0
"""Seconds between the lines that say the service is waiting for a step's rollouts."""


class InputExhausted(RuntimeError):
    """A finite input (a JSONL file) ended before `--steps` steps."""


StepHook = Callable[[int, list[SourcedRollout]], None]
"""Called after each `ppo_step`, before its checkpoint, with (step, records trained)."""


def resolve_start_model(model: str) -> Path:
    """`tiny`, a HF folder, an SFT checkpoint folder (`<sft-out>/checkpoints/step_<n>`, whose
    `model/` is used) or an SFT run folder (`<sft-out>`: its `checkpoints/latest`)."""
    folder = Path(model)
    if model == "tiny" or (folder / "config.json").is_file():
        return resolve_model_dir(model)
    if (folder / "model" / "config.json").is_file():
        return resolve_model_dir(str(folder / "model"))
    latest = latest_checkpoint(folder) if folder.is_dir() else None
    if latest is not None:
        return resolve_model_dir(str(latest / "model"))
    raise FileNotFoundError(
        f"--model {model!r}: expected 'tiny', a HF folder with config.json, an SFT checkpoint "
        "(<sft-out>/checkpoints/step_<n>) or an SFT run folder (<sft-out>, the --out of spa_trainer.sft)"
    )


@dataclass
class Service:
    """A running service: source, sinks, model state, tokenizer and position."""

    cfg: ServiceConfig
    source: RolloutSource
    dead_letters: DeadLetters
    state: PpoState
    tokenizer: PreTrainedTokenizerBase
    progress: Progress
    buffer: GroupBuffer
    out: Path
    last_line_at: float = field(default_factory=time.monotonic)
    tracer: OtlpJsonTracer | None = None  # when OTEL_EXPORTER_OTLP_ENDPOINT is set
    reporter: Reporter = field(default_factory=Reporter)  # TensorBoard / W&B (--report-to)
    steps_left: StepsLeft = field(default_factory=lambda: StepsLeft(0, 0))  # time left, set when training starts

    def log(self, line: str) -> None:
        """Progress and problems go to stderr (stdout stays free for a final summary)."""
        print(f"[ppo] {line}", file=sys.stderr, flush=True)

    def reject(self, item: SourcedRollout, reason: str, detail: str) -> None:
        """Count a bad record and dead-letter it with its reason (nothing is dropped silently)."""
        self.progress.rejected[reason] = self.progress.rejected.get(reason, 0) + 1
        self.dead_letters.reject(
            SourcedRollout(
                item.partition, item.offset, item.key, item.payload, item.headers, reason=reason, detail=detail
            ),
            self.source.describe().split(":", 1)[1],
        )
        self.log(f"rejected {self.source.describe()}[{item.partition}]@{item.offset}: {reason}: {detail}")

    def committed_offsets(self) -> Offsets:
        """Per partition, the offset below which every record is trained or dead-lettered."""
        low = dict(self.progress.next_offsets)
        for item in self.buffer.items():
            low[item.partition] = min(low.get(item.partition, item.offset), item.offset)
        return low


def save_service_checkpoint(svc: Service) -> Path:
    """Everything a restart needs, atomically (`ppo_checkpoint.write_ppo_checkpoint`)."""
    return write_ppo_checkpoint(
        svc.out, svc.state, svc.tokenizer, svc.progress, svc.buffer.items(), svc.buffer.trained, svc.source.describe(),
        json.loads(json.dumps(asdict(svc.cfg), default=str)),
    )  # fmt: skip


def _open_io(cfg: ServiceConfig, out: Path, start: Offsets) -> tuple[RolloutSource, DeadLetters]:
    """Input, dead letters, and a check that the publish topic exists: all before the model loads,
    so a missing broker or topic is reported in seconds."""
    source = open_rollout_source(cfg.input, start, brokers=cfg.brokers, group_id=f"spa-ppo-{out.name}")
    try:
        default_dlq = "kafka:spa.dlq" if cfg.input.startswith("kafka:") else f"jsonl:{out / 'dlq.jsonl'}"
        dead_letters = open_dead_letters(cfg.dlq or default_dlq, brokers=cfg.brokers)
        if cfg.publish:
            from ..kafka.client import require_topic

            require_topic(cfg.publish, cfg.brokers)
    except BaseException:
        source.close()
        raise
    return source, dead_letters


def load_training_state(
    cfg: ServiceConfig, resume: Path | None, ranks: Ranks
) -> tuple[PpoState, PreTrainedTokenizerBase]:
    """Actor, critic, optimizers and RNG from `--model` or the checkpoint `resume` (every rank
    loads the same; with several ranks the models are wrapped in DDP)."""
    torch.manual_seed(cfg.seed)
    start_model = str(resolve_model_dir(cfg.model))
    actor, tokenizer, _ = load_policy(str(resume / "model") if resume else start_model, ranks.device)
    # The KL reference is the start model, also when the actor resumes from a checkpoint.
    reference = load_policy(start_model, ranks.device)[0] if resume and cfg.ppo.kl_loss_coef > 0 else None
    ppo_config = replace(cfg.ppo, prompt_budget=cfg.prompt_budget()) if cfg.context_window else cfg.ppo
    state = init_ppo(actor, ppo_config, reference=reference, ranks=ranks)
    if resume is not None:
        restore_training_state(resume, state, read_progress(resume)[1])
    return state, tokenizer


def prepare_service(cfg: ServiceConfig, ranks: Ranks) -> Service:
    """Fresh start from `--model`, or resume everything from `<out>/checkpoints/latest` (rank 0;
    the other ranks `follow_main`)."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if ranks.main:
        remove_stale_temp_folders(out, "ppo")
    resume = from_main(latest_checkpoint(out), ranks)
    if resume is None:
        start = cfg.start_version if cfg.start_version is not None else next_version(Path(cfg.export_root)) - 1
        progress = Progress(version=start)
    else:
        progress, _rng = read_progress(resume)
    source, dead_letters = _open_io(cfg, out, progress.next_offsets)
    try:
        state, tokenizer = load_training_state(cfg, resume, ranks)
    except BaseException:
        source.close()
        raise
    trained = read_trained_groups(resume) if resume else []
    buffer = GroupBuffer(cfg.group_size, cfg.max_open_groups or 4 * cfg.groups_per_step, trained)
    # a resume purges the TensorBoard steps it trains again, as metrics.jsonl drops their lines below
    reporter = open_reporter(
        cfg.report_to, out=out, logging_dir=cfg.logging_dir, run_name=cfg.run_name,
        config=json.loads(json.dumps(asdict(cfg), default=str)), purge_step=progress.step + 1 if progress.step else None,
    )  # fmt: skip
    svc = Service(
        cfg, source, dead_letters, state, tokenizer, progress, buffer, out, tracer=tracer_from_env("spa-trainer"),
        reporter=reporter,
    )  # fmt: skip
    for item in read_pending(resume) if resume else []:
        for bad, reason, detail in buffer.add(item):  # only if --max-open-groups shrank
            svc.reject(bad, reason, detail)
    metrics = out / "metrics.jsonl"
    if metrics.is_file():  # drop lines of steps the checkpoint does not hold (they are redone)
        kept = [ln for ln in metrics.read_text().splitlines() if ln and json.loads(ln)["step"] <= progress.step]
        metrics.write_text("".join(ln + "\n" for ln in kept))
    where = f"resumed {resume.name}" if resume else f"started from {cfg.model}"
    device = f"{ranks.world_size} ranks on {ranks.device.type}" if ranks.parallel else str(state.device)
    svc.log(f"{where}: step {progress.step}/{cfg.steps}, version {progress.version}, offsets {progress.next_offsets}, "
            f"{len(buffer.items())} pending records; input {source.describe()} on {device}")  # fmt: skip
    return svc


def collect_groups(svc: Service) -> tuple[list[SourcedRollout], float]:
    """Poll until G complete groups are buffered; returns their records and the seconds spent
    waiting for data. Bad records are dead-lettered and skipped (their offsets advance too)."""
    waited, idle, last_note = 0.0, 0.0, time.monotonic()
    while not svc.buffer.ready(svc.cfg.groups_per_step):
        if time.monotonic() - last_note >= WAITING_NOTE_S:  # the generators may take minutes for a step's groups
            last_note = time.monotonic()
            note = svc.source.last_error()
            svc.log(
                f"step {svc.progress.step + 1}: waiting for rollouts, {len(svc.buffer.complete)}/"
                f"{svc.cfg.groups_per_step} complete groups, {waited:.0f} s ({idle:.0f} s idle{'; ' + note if note else ''})"
            )
        t0 = time.monotonic()
        item = svc.source.poll(1.0)
        waited += time.monotonic() - t0
        if item is None:
            idle += time.monotonic() - t0
            if svc.source.exhausted():
                raise InputExhausted(
                    f"{svc.source.describe()} ended after step {svc.progress.step} of {svc.cfg.steps} "
                    f"({len(svc.buffer.complete)} complete groups of {svc.cfg.groups_per_step} for the next step)"
                )
            if svc.cfg.idle_timeout is not None and idle > svc.cfg.idle_timeout:
                raise TimeoutError(f"no record from {svc.source.describe()} for {idle:.0f} s (--idle-timeout)")
            continue
        idle = 0.0
        svc.progress.next_offsets[item.partition] = item.offset + 1
        if item.record is None:
            svc.reject(item, item.reason, item.detail)
            continue
        for bad, reason, detail in svc.buffer.add(item):
            svc.reject(bad, reason, detail)
    return svc.buffer.take(svc.cfg.groups_per_step), waited


def export_and_publish(svc: Service, checkpoint: Path) -> Path:
    """ONNX artifact `<export-root>/v<version>/` of the checkpoint's actor, then a PolicyUpdate.
    Idempotent, so a restart after a crash between checkpoint and publish simply redoes it."""
    from ..topics.policy_updates import policy_update_from_manifest, publish_policy_update

    version, step = svc.progress.version, svc.progress.exported_step
    root = Path(svc.cfg.export_root)
    artifact = root / f"v{version:06d}"
    if artifact.exists():
        manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
        if (manifest["stage"], manifest["step"]) != ("ppo", step):
            raise FileExistsError(
                f"{artifact} holds {manifest['stage']} step {manifest['step']}, not ppo step {step}: "
                "another run exported this version; pass --start-version past the root's highest v<n>"
            )
        action = "found"
    else:
        artifact = export_policy(checkpoint / "model", root, "ppo", step, svc.cfg.model, version=version)
        action = "exported"
    if svc.cfg.publish:
        publish_policy_update(policy_update_from_manifest(artifact), svc.cfg.publish, svc.cfg.brokers)
    svc.log(
        f"{action} v{version} (step {step}) at {artifact}"
        + (f", published on {svc.cfg.publish}" if svc.cfg.publish else "")
    )
    return artifact


def metrics_line(
    svc: Service, metrics: dict[str, float], staleness: dict[int, int], over: int, timing: dict[str, float]
) -> dict[str, Any]:
    """One `<out>/metrics.jsonl` entry (named fields first, every `ppo_step` metric under `ppo`)."""
    return {
        "step": svc.progress.step,
        "trainer_version": int(metrics["trainer/version"]),
        "records": sum(staleness.values()),
        "pg_loss": metrics["actor/pg_loss"],
        "vf_loss": metrics.get("critic/vf_loss"),  # None: no critic (--adv-estimator grpo)
        "entropy": metrics["actor/entropy"],
        "score_mean": metrics["score/mean"],
        "success_rate": metrics["score/success_rate"],
        "staleness": {str(lag): n for lag, n in staleness.items()},
        "over_max_staleness": over,
        "rejected_total": sum(svc.progress.rejected.values()),
        "tokens_per_s": metrics["perf/tokens_per_s"],
        **timing,
        "ppo": metrics,
    }


TRL_NAMES = {
    "actor/pg_loss": "train/loss",
    "actor/entropy": "train/entropy",
    "actor/kl_loss": "train/kl",  # the KL to the start model, TRL GRPO's `kl`
    "actor/grad_norm": "train/grad_norm",
    "score/mean": "train/reward",
}
"""The PPO step's metrics that TRL logs under its own name (GRPOTrainer's); the rest keep theirs (verl's)."""


def step_scalars(svc: Service, line: dict[str, Any]) -> dict[str, float]:
    """A metrics line as the scalars `--report-to` gets: every `ppo_step` metric, TRL's names where it
    has them, the actor's learning rate, and the service's timing, staleness and rejects."""
    scalars = {TRL_NAMES.get(str(k), str(k)): float(v) for k, v in line["ppo"].items()}
    return {
        **scalars,
        "train/learning_rate": svc.state.actor_optimizer.param_groups[0]["lr"],
        "staleness/over_max": line["over_max_staleness"],
        "trainer/rejected_total": line["rejected_total"],
        "perf/waited_s": line["waited_s"],
        "perf/wall_s": line["wall_s"],
    }


def log_step(svc: Service, line: dict[str, Any], staleness: dict[int, int]) -> None:
    """The per-step progress line on stderr."""
    stale = " ".join(f"{lag}:{n}" for lag, n in staleness.items())
    over = line["over_max_staleness"]
    svc.log(
        f"step {line['step']}/{svc.cfg.steps} v{line['trainer_version']} pg {line['pg_loss']:.4f} "
        + ("" if line["vf_loss"] is None else f"vf {line['vf_loss']:.4f} ")
        + f"ent {line['entropy']:.3f} score {line['score_mean']:.3f} "
        f"succ {line['success_rate']:.2f} staleness {{{stale}}}{f' over-max {over}' if over else ''} "
        f"tok/s {line['tokens_per_s']:.0f} wait {line['waited_s']:.1f}s wall {line['wall_s']:.1f}s"
        + svc.steps_left.text(line["step"])
    )


def export_due(step: int, steps: int, export_every: int) -> bool:
    """Whether step `step` (1-based) of `steps` ends with an export: every `export_every` steps,
    and the last step always, so the final policy is published (docs/spa-schedule.md#trainer)."""
    return step % export_every == 0 or step == steps


def train_one_step(svc: Service, on_step: StepHook | None) -> dict[str, Any]:
    """Collect, `ppo_step`, metrics line, checkpoint, commit, and export when due."""
    cfg, progress = svc.cfg, svc.progress
    items, waited = collect_groups(svc)
    svc.state.version = progress.version  # staleness against the latest published version
    # A `train step N` span linked to every record's traceparent (infra/otel/README.md).
    topic = svc.source.describe().split(":", 1)[1]
    records = [(topic, i.headers) for i in items]
    rollouts = [i.record for i in items if i.record is not None]
    from_main((svc.state.version, rollouts), svc.state.ranks)  # the other ranks train their share of them
    with svc.tracer.traced_step(progress.step + 1, records, "ppo") if svc.tracer else contextlib.nullcontext():
        report = ppo_step(svc.state, rollouts, svc.tokenizer)
    over = sum(n for lag, n in report.staleness.items() if cfg.max_staleness is not None and lag > cfg.max_staleness)
    progress.step += 1
    progress.records_trained += len(items)
    progress.over_max_staleness += over
    if on_step is not None:
        on_step(progress.step, items)
    exporting = export_due(progress.step, cfg.steps, cfg.export_every)
    if exporting:  # the checkpoint already carries the version this step publishes
        progress.version += 1
        progress.exported_step = progress.step
    # wall_s: time since the previous line, so it includes the last checkpoint and export too.
    now = time.monotonic()
    timing = {"waited_s": waited, "train_s": report.metrics["perf/step_seconds"], "wall_s": now - svc.last_line_at}
    svc.last_line_at = now
    line = metrics_line(svc, report.metrics, report.staleness, over, timing)
    # Written before the checkpoint: a restart drops lines past the checkpoint's step.
    with (svc.out / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(dumps(line) + "\n")
    log_step(svc, line, report.staleness)
    svc.reporter.log(step_scalars(svc, line), progress.step)
    svc.dead_letters.flush()  # rejects are durable before the offsets that skip them
    checkpoint = save_service_checkpoint(svc)
    svc.source.commit(svc.committed_offsets())
    if exporting:
        export_and_publish(svc, checkpoint)
    write_progress_file(svc.out, progress, cfg.steps)
    return line


def follow_main(cfg: ServiceConfig, ranks: Ranks) -> None:
    """A rank other than 0: load what rank 0 loads, then train its share of every step's records,
    which rank 0 reads, checks and hands over, until rank 0 says the run is done (None)."""
    resume = from_main(None, ranks)
    state, tokenizer = load_training_state(cfg, resume, ranks)
    step: tuple[int, list[Rollout]] | None
    while (step := from_main(None, ranks)) is not None:
        state.version, rollouts = step
        ppo_step(state, rollouts, tokenizer)


def run_service(cfg: ServiceConfig, on_step: StepHook | None = None, ranks: Ranks | None = None) -> Progress:
    """Train until `cfg.steps` steps are checkpointed (resuming if `<out>` has a checkpoint). Under
    torchrun this is rank 0's loop (`ranks`); the other ranks run `follow_main`."""
    hf_logging.disable_progress_bar()
    ranks = ranks or single()
    svc = prepare_service(cfg, ranks)
    try:
        latest = latest_checkpoint(svc.out)
        if latest is not None and svc.progress.exported_step == svc.progress.step:
            export_and_publish(svc, latest)  # the last run may have died between checkpoint and publish
        svc.steps_left = StepsLeft(svc.progress.step, cfg.steps)
        while svc.progress.step < cfg.steps:
            train_one_step(svc, on_step)
        from_main(None, ranks)  # the other ranks are done
        write_progress_file(svc.out, svc.progress, cfg.steps)  # also when there was nothing left to train
    finally:
        svc.source.close()
        svc.reporter.close()
    totals = Counter[int]()
    for ln in (svc.out / "metrics.jsonl").read_text().splitlines() if (svc.out / "metrics.jsonl").is_file() else []:
        totals.update({int(k): v for k, v in json.loads(ln)["staleness"].items()})
    svc.log(f"done: step {svc.progress.step}, version {svc.progress.version}, {svc.progress.records_trained} records, "
            f"staleness {dict(sorted(totals.items()))}, rejected {svc.progress.rejected}")  # fmt: skip
    return svc.progress


def main(argv: list[str]) -> int:
    """Run the service; boundary errors (no broker, missing input, input ended) print one line, exit 2."""
    cfg = parse_args(argv)

    def serve() -> None:
        ranks = join_ranks()  # torchrun's rank, or the single process
        together = False
        try:
            if not ranks.main:  # rank 0 reads, checkpoints and reports
                follow_main(cfg, ranks)
                together = True
                return
            progress = run_service(cfg, ranks=ranks)  # its DDP wrappers are gone with it (data_parallel.leave)
            together = True
        finally:
            leave(ranks, together)
        print(dumps({"step": progress.step, "version": progress.version, "records": progress.records_trained,
                     "rejected": progress.rejected, "out": cfg.out}))  # fmt: skip

    return exit_code("ppo", serve, also=(InputExhausted,))
