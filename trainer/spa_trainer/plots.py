"""A run's pictures: Pass@1 (± standard error) by policy version beside the random floor, and the
run's stage timeline, as one PNG (matplotlib, Agg: no display needed).

    python -m spa_trainer.plots runs/<run>/summary.json            # → runs/<run>/summary.png
    python -m spa_trainer.plots runs/ppo-check/ppo-check.json      # → runs/ppo-check/ppo-check.png

`spa run` calls it at the end of a run and scripts/ppo-check.ts after the check (a check's picture has
one curve per arm, by PPO step, and each arm's timeline). The input is what they write: a run's
summary.json (`evaluations`, `seconds`) or the check's JSON (`arms`: a summary per arm).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, on machines without a display
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from .eval_board import curve_step, is_floor

Summary = Mapping[str, Any]
"""A run's summary.json (loop/spa-loop.ts `LoopSummary`)."""


def pass1_curve(ax: Axes, summary: Summary, label: str, by_step: bool = False) -> None:
    """Pass@1 % ± standard error of each evaluated policy, by version (or PPO step)."""
    policies = sorted((e for e in summary["evaluations"] if not is_floor(e)), key=lambda e: e["policyVersion"])
    xs = [curve_step(summary, e["policyVersion"], by_step) for e in policies]
    ys = [100 * e["pass1"] for e in policies]
    errors = [100 * e["pass1StdErr"] for e in policies]
    ax.errorbar(xs, ys, yerr=errors, marker="o", capsize=4, label=label)
    if not by_step:
        for x, y, e in zip(xs, ys, policies, strict=True):
            ax.annotate(e["stage"], (x, y), textcoords="offset points", xytext=(6, 6), fontsize=8)


def floor_band(ax: Axes, summary: Summary) -> None:
    """The random floor's Pass@1 as a line with its ± standard error band."""
    floor = next((e for e in summary["evaluations"] if is_floor(e)), None)
    if floor is None:
        return
    mean, se = 100 * floor["pass1"], 100 * floor["pass1StdErr"]
    ax.axhline(mean, color="grey", linestyle="--", label=f"random floor {mean:.1f} ± {se:.1f}")
    ax.axhspan(mean - se, mean + se, color="grey", alpha=0.2)


def timeline(ax: Axes, rows: Sequence[tuple[str, Mapping[str, float]]]) -> None:
    """Each row's stages one after another, as summed in its summary's `seconds` (minutes)."""
    colours: dict[str, Any] = {}
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for y, (_, seconds) in enumerate(rows):
        start = 0.0
        for stage, s in seconds.items():
            colour = colours.setdefault(stage, cycle[len(colours) % len(cycle)])
            ax.barh(y, s / 60, left=start / 60, color=colour, edgecolor="white", label=stage if y == 0 else None)
            if s / 60 > 0.04 * sum(seconds.values()) / 60:  # a label where the bar has room for it
                ax.text((start + s / 2) / 60, y, f"{s:.0f}s", ha="center", va="center", fontsize=7, color="white")
            start += s
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("minutes")
    ax.set_title("stage timeline")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))


def run_figure(summary: Summary) -> Any:
    """A run's picture: Pass@1 by policy version beside the floor; its stage timeline."""
    fig, (curve, stages) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 1.2]})
    config = summary["config"]
    pass1_curve(curve, summary, "Pass@1")
    floor_band(curve, summary)
    puzzles = f"{config['evalPuzzles']} validation puzzles × {config['evalK']}"
    curve.set(xlabel="policy version", ylabel="Pass@1 % (± standard error)", title=f"Pass@1 by policy ({puzzles})")
    versions = sorted({e["policyVersion"] for e in summary["evaluations"] if not is_floor(e)})
    curve.set_xticks(versions)
    if versions:  # room for the last point's stage label
        curve.set_xlim(versions[0] - 0.5, versions[-1] + 0.9)
    curve.set_ylim(0, 100)
    curve.legend(fontsize=8, loc="upper right")  # the points' stage labels sit low when they score low
    timeline(stages, [(summary["runId"], summary["seconds"])])
    fig.suptitle(f"spa run {summary['runId']}: {config['name']} ({config['env']}, model {config['model']})")
    fig.tight_layout()
    return fig


def check_figure(check: Mapping[str, Any]) -> Any:
    """A ppo-check's picture: every arm's Pass@1 by PPO step beside the floor; each arm's timeline."""
    arms: Mapping[str, Summary] = check["arms"]
    fig, (curve, stages) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 1.2]})
    for arm, summary in arms.items():
        pass1_curve(curve, summary, arm, by_step=True)
    first = next(iter(arms.values()), None)
    if first is not None:
        floor_band(curve, first)
    curve.set(xlabel="PPO step", ylabel="Pass@1 % (± standard error)", title="Pass@1 by PPO step", ylim=(0, 100))
    curve.legend(fontsize=8, loc="lower right")
    timeline(stages, [(arm, s["seconds"]) for arm, s in arms.items()])
    fig.suptitle("ppo-check")
    fig.tight_layout()
    return fig


def write_plot(source: Path, out: Path | None = None) -> Path:
    """The PNG of `source` (a summary.json or a ppo-check.json) beside it (or at `out`); its path."""
    data = json.loads(source.read_text(encoding="utf-8"))
    fig = check_figure(data) if "arms" in data else run_figure(data)
    target = out or source.with_suffix(".png")
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m spa_trainer.plots", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a run's summary.json or a ppo-check's ppo-check.json")
    parser.add_argument("--out", type=Path, help="the PNG (default: the source's name with .png)")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        parser.error(f"{args.source}: no such file (a run's summary.json or a ppo-check's ppo-check.json)")
    print(write_plot(args.source, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
