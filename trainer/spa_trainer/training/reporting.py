"""Where a trainer's scalars go besides steps.jsonl/metrics.jsonl: TensorBoard and Weights & Biases.

`report_to` is transformers' and TRL's setting of the same name: `none`, `tensorboard` (the default
here), `wandb`, or several. TensorBoard gets one run per job in `logging_dir` (`spa run` gives each
stage `<run>/tensorboard/<stage>`), written with torch's `SummaryWriter`. W&B runs in offline mode
unless `WANDB_MODE` says otherwise (this project's machines reach no W&B server; `wandb sync
<out>/wandb/offline-run-*` uploads a run later), into `<out>/wandb/`.

Metrics keep TRL's names where TRL logs the same quantity (`train/loss`, `train/learning_rate`,
`train/grad_norm`, `train/epoch`, `train/entropy`, `train/kl`, `train/reward`, `eval/loss`) and the
trainer's own (verl's: `actor/pg_clipfrac`, `critic/vf_loss`, …) otherwise. Only the main rank reports.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

ReportTarget = Literal["none", "tensorboard", "wandb"]
"""A destination of `--report-to` (transformers' `report_to` values this trainer supports)."""

REPORT_TO_HELP = (
    "where scalars go besides the run folder's JSON lines, one or more of none, tensorboard (<logging-dir>), "
    "wandb (offline unless WANDB_MODE is set; <out>/wandb): TRL's report_to"
)


def report_targets(report_to: tuple[str, ...]) -> set[str]:
    """The destinations `report_to` names; `none` alone means none. `none` beside another is an error."""
    targets = set(report_to)
    if "none" in targets and len(targets) > 1:
        raise ValueError(f"--report-to {' '.join(report_to)}: none means no destination; give it alone")
    return targets - {"none"}


class _Sink(Protocol):
    def log(self, scalars: Mapping[str, float], step: int) -> None: ...

    def close(self) -> None: ...


class _TensorBoard:
    """A TensorBoard run folder. `purge_step`: on a resume, the steps from there on are dropped
    from the earlier event files of the folder (they are trained again, as steps.jsonl drops them)."""

    def __init__(self, logging_dir: Path, purge_step: int | None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(logging_dir), purge_step=purge_step)

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, step)
        self.writer.flush()  # a TensorBoard open beside the run shows each step as it ends

    def close(self) -> None:
        self.writer.close()


class _Wandb:
    """A W&B run, offline unless `WANDB_MODE` is set (`wandb sync` uploads it later)."""

    def __init__(self, out: Path, run_name: str, group: str | None, config: Mapping[str, Any]) -> None:
        try:
            import wandb
        except ImportError as error:  # not installed, or a dependency of it missing from the wheel index
            raise ValueError(
                f"--report-to wandb: wandb does not import ({error}); `node scripts/setup.mjs python` installs "
                "it where the wheel index has its dependencies, or leave wandb out of --report-to"
            ) from error

        mode = os.environ.get("WANDB_MODE", "offline")
        if mode not in ("online", "offline", "disabled", "shared"):
            raise ValueError(f"WANDB_MODE={mode}: expected online, offline, disabled or shared")
        out.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "spa"),
            name=run_name,
            group=group,
            dir=str(out),
            config=dict(config),
            mode=mode,
            settings=wandb.Settings(console="off", silent=True),
        )

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        self.run.log(dict(scalars), step=step)

    def close(self) -> None:
        self.run.finish()


@dataclass
class Reporter:
    """The destinations of one job's scalars; `log` skips a value that is None or not finite."""

    sinks: list[_Sink] = field(default_factory=list)

    def log(self, scalars: Mapping[str, float | None], step: int) -> None:
        finite = {k: float(v) for k, v in scalars.items() if v is not None and math.isfinite(float(v))}
        for sink in self.sinks:
            sink.log(finite, step)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
        self.sinks = []


def open_reporter(
    report_to: tuple[str, ...],
    *,
    out: Path,
    logging_dir: str | None,
    run_name: str | None,
    config: Mapping[str, Any],
    purge_step: int | None = None,
) -> Reporter:
    """The reporter of a job writing to `out`: TensorBoard in `logging_dir` (default
    `<out>/tensorboard`), W&B in `<out>/wandb` named `run_name` (default `out`'s folder name) and
    grouped by the part of `run_name` before its last `/` (`spa run` names a stage `<run id>/<stage>`)."""
    targets = report_targets(report_to)
    sinks: list[_Sink] = []
    if "tensorboard" in targets:
        sinks.append(_TensorBoard(Path(logging_dir) if logging_dir else out / "tensorboard", purge_step))
    if "wandb" in targets:
        name = run_name or out.name
        sinks.append(_Wandb(out, name, name.rsplit("/", 1)[0] if "/" in name else None, config))
    return Reporter(sinks)
