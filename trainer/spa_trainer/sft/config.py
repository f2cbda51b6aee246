"""SFT's settings, each once: the field, its flag (`--<field>`), its help and its range.

`python -m spa_trainer.sft --help` and schemas/trainer-settings.json are made from `SftConfig`
(spa_trainer.cli.settings); the recipe's constants (betas, weight decay, warmup, clip) are fields
without a flag. Defaults are SPA's paper-faithful recipe (docs/spa-sft.md#target).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from ..cli.errors import EPOCHS_MAX, ROWS_MAX, SEED_MAX, STEPS_MAX, TOKENS_MAX, WEIGHT_MAX
from ..cli.settings import add_settings, config_from, setting
from ..training.reporting import REPORT_TO_HELP, ReportTarget


@dataclass
class SftConfig:
    """Hyperparameters (docs/spa-sft.md#target) and run options."""

    model: str = setting("tiny", help="'tiny' or a local HF causal-LM folder")
    input: str = setting("", help="jsonl:<path> or kafka:<topic>", required=True)
    out: str = setting("runs/sft", help="run folder (checkpoints, metrics); resumes if present")
    epochs: int = setting(5, help="passes over the training rows", range=(1, EPOCHS_MAX))
    batch_size: int = setting(16, help="rows per optimizer step (SPA: 16)", range=(1, ROWS_MAX))
    micro_batch_size: int = setting(
        1, help="rows per forward pass (SPA: 1); speed and memory only, the loss is the same", range=(1, ROWS_MAX)
    )
    lr: float = setting(1e-4, help="AdamW learning rate (SPA: 1e-4)", range=(0, 1), above=True)
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_length: int = setting(2048, help="window in tokens, left-truncated", range=(1, TOKENS_MAX))
    val_fraction: float = setting(
        0.2, help="rows held out, by puzzle (no puzzle straddles the split)", range=(0, 1), below=True
    )
    val_input: str | None = setting(None, help="separate held-out source (jsonl:/kafka:) instead of the split")
    released_masking: bool = setting(False, help="SPA's released placeholder variant")
    mask_transitions: bool = setting(
        False,
        help="the paper's masking ablation: the contents of <observation> (current state) and <prediction> "
        "(next state) are not trained; rows written by `spa generate --mask-transitions` ask for the same",
    )
    mask_predictions: bool = setting(False, help="only the contents of <prediction> (next state) are not trained")
    decision_weight: float = setting(
        1.0,
        help="loss weight of the target tokens outside the <observation>/<prediction> contents (thoughts, tags, "
        "answer, end of turn; state tokens weigh 1); each row's loss is its weighted mean. Default 1 (SPA's plain "
        "mean); for a tiny model whose 1-2 action tokens drown in ~150 state tokens. No effect with "
        "--released-masking",
        range=(0, WEIGHT_MAX),
        above=True,
        metavar="W",
    )
    checkpoint_every: int = setting(
        50, help="optimizer steps between checkpoints (one more at the end of every epoch)", range=(1, STEPS_MAX)
    )
    log_every: int = setting(50, help="a progress line every N steps (and the first, last)", range=(1, STEPS_MAX))
    max_steps: int | None = setting(
        None,
        help="training budget: end after this optimizer step (evaluate, checkpoint, export); "
        "the LR schedule stays that of --epochs, as SPA's total_training_steps",
        range=(1, STEPS_MAX),
    )
    stop_after_steps: int | None = setting(
        None,
        help="interruption: checkpoint after this step and exit without evaluating or exporting; "
        "the same command without it resumes",
        range=(1, STEPS_MAX),
    )
    eval_rows: int = setting(32, help="held-out rows scored by exact match", range=(0, ROWS_MAX))
    seed: int = setting(
        0,
        help="initial RNG and shuffle seed: epoch e visits the rows in the permutation of seed + e",
        range=(0, SEED_MAX),
    )
    brokers: str | None = setting(None, help="Kafka bootstrap servers (default $KAFKA_BROKERS)")
    export: str | None = setting(None, help="export ONNX to DIR/v<n>/ after training", metavar="DIR")
    publish: str | None = setting(None, help="publish a PolicyUpdate on TOPIC (needs --export)", metavar="TOPIC")
    skip_bad_rows: bool = setting(
        False,
        help="an input record that is not an SftRow goes to the dead letters (reason: schemas/reject-reasons.json) "
        "instead of stopping the run",
    )
    dlq: str | None = setting(
        None,
        help="dead letters of --skip-bad-rows: kafka:<topic> or jsonl:<path> (default kafka:spa.dlq for kafka input, "
        "jsonl:<out>/dlq.jsonl for jsonl input)",
    )
    report_to: tuple[ReportTarget, ...] = setting(("tensorboard",), help=REPORT_TO_HELP)
    logging_dir: str | None = setting(None, help="TensorBoard run folder (default <out>/tensorboard)", metavar="DIR")
    run_name: str | None = setting(None, help="the W&B run's name (default: the --out folder's name)")
    extra: dict[str, object] = field(default_factory=dict)


def parse_args(argv: list[str]) -> SftConfig:
    """CLI flags → SftConfig."""
    p = argparse.ArgumentParser(prog="python -m spa_trainer.sft", description="World-model SFT (docs/spa-sft.md).")
    add_settings(p, SftConfig)
    a = p.parse_args(argv)
    if a.mask_transitions and a.mask_predictions:
        p.error("--mask-transitions masks the predictions already: give one of --mask-transitions, --mask-predictions")
    if a.publish and not a.export:
        p.error("--publish needs --export DIR (the PolicyUpdate points at the exported artifact)")
    if "none" in a.report_to and len(set(a.report_to)) > 1:
        p.error(f"--report-to {' '.join(a.report_to)}: none means no destination; give it alone")
    return config_from(SftConfig, a)
