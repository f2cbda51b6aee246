"""A run's evaluations as scalars beside its training curves: Pass@1 / Pass@k (± standard error)
and the random floor, in TensorBoard (and W&B with `--report-to wandb`).

    python -m spa_trainer.eval_board runs/<run>/summary.json --logging-dir runs/<run>/tensorboard/eval
    python -m spa_trainer.eval_board runs/ppo-check/ppo-check.json --logging-dir runs/ppo-check/tensorboard

A run's summary becomes one TensorBoard run whose step is the policy version (`spa run` writes
`<run>/tensorboard/eval`); a ppo-check's JSON one run per arm (`<logging-dir>/<arm>`) whose step is
the PPO step, the check's table's axis. Written from Python, not from `spa run`'s TypeScript: npm has
no maintained tfevents writer (TensorFlow.js's needs libtensorflow), and this is torch's SummaryWriter,
the one the trainers write with (training.reporting).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .training.reporting import REPORT_TO_HELP, open_reporter, report_targets


def is_floor(evaluation: Mapping[str, Any]) -> bool:
    """The random policy's evaluation (loop/evaluate.ts), the floor every policy is compared with."""
    return evaluation.get("stage") == "random floor" or evaluation.get("policy") == "random"


def curve_step(summary: Mapping[str, Any], version: int, by_step: bool) -> int:
    """Where policy `version` stands on a curve's x-axis: the version, or with `by_step` its PPO step
    (a learning curve's versions are `exportEvery` steps apart from the first evaluated one)."""
    if not by_step:
        return version
    first = min(e["policyVersion"] for e in summary["evaluations"] if not is_floor(e))
    return (version - first) * int(summary["config"]["exportEvery"])


def eval_scalars(summary: Mapping[str, Any], by_step: bool = False) -> dict[int, dict[str, float]]:
    """Step (`curve_step`) → scalars of each evaluated policy: `eval/pass@1`, `eval/pass@<k>`, their
    standard errors and the floor's Pass@1 beside them."""
    evaluations = summary["evaluations"]
    floor = next((e for e in evaluations if is_floor(e)), None)
    out: dict[int, dict[str, float]] = {}
    for e in (e for e in evaluations if not is_floor(e)):
        k = e["k"]
        out[curve_step(summary, e["policyVersion"], by_step)] = {
            "eval/pass@1": e["pass1"],
            "eval/pass@1_stderr": e["pass1StdErr"],
            f"eval/pass@{k}": e["passK"],
            f"eval/pass@{k}_stderr": e["passKStdErr"],
            **({"eval/random_floor_pass@1": floor["pass1"]} if floor else {}),
        }
    return out


def write_eval_board(source: Path, logging_dir: Path, report_to: tuple[str, ...]) -> list[Path]:
    """The evaluations of `source` (summary.json or ppo-check.json) as TensorBoard runs under
    `logging_dir` (and W&B runs); the TensorBoard run folders written."""
    data = json.loads(source.read_text(encoding="utf-8"))
    runs = [(logging_dir / arm, s, True) for arm, s in data["arms"].items()] if "arms" in data else [(logging_dir, data, False)]  # fmt: skip
    for folder, summary, by_step in runs:
        name = f"{summary.get('runId', source.parent.name)}/eval"
        reporter = open_reporter(report_to, out=source.parent, logging_dir=str(folder), run_name=name, config={})
        try:
            for step, scalars in sorted(eval_scalars(summary, by_step).items()):
                reporter.log(scalars, step)
        finally:
            reporter.close()
    return [folder for folder, _, _ in runs]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spa_trainer.eval_board", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("source", type=Path, help="a run's summary.json or a ppo-check's ppo-check.json")
    parser.add_argument("--logging-dir", type=Path, required=True, help="the TensorBoard run folder (a check's: per arm under it)")  # fmt: skip
    parser.add_argument("--report-to", nargs="+", default=["tensorboard"], choices=["none", "tensorboard", "wandb"], help=REPORT_TO_HELP)  # fmt: skip
    args = parser.parse_args(argv)
    if not args.source.is_file():
        parser.error(f"{args.source}: no such file (a run's summary.json or a ppo-check's ppo-check.json)")
    try:
        report_targets(tuple(args.report_to))
    except ValueError as error:
        parser.error(str(error))
    for folder in write_eval_board(args.source, args.logging_dir, tuple(args.report_to)):
        print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
