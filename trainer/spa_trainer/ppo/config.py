"""The PPO service's settings, each once: the field, its flag (`--<field>`), its help and its range.

`python -m spa_trainer.ppo_service --help` and schemas/trainer-settings.json are made from
`ServiceConfig` and the `PpoConfig` it holds (spa_trainer.cli.settings).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from ..cli.errors import (
    BATCHES_MAX,
    GROUP_SIZE_MAX,
    GROUPS_MAX,
    IDLE_TIMEOUT_MAX_S,
    OPEN_GROUPS_MAX,
    SEED_MAX,
    STALENESS_MAX,
    TOKENS_MAX,
    VERSION_MAX,
)
from ..cli.settings import add_settings, config_from, setting
from ..training.reporting import REPORT_TO_HELP, ReportTarget
from .step import PpoConfig


@dataclass
class ServiceConfig:
    """The PPO service's settings, each a flag of `python -m spa_trainer.ppo_service`
    (spa_trainer.cli.settings); the PPO hyperparameters are `PpoConfig`'s (docs/spa-ppo.md#hyperparameters)."""

    model: str = setting(help="'tiny', a HF folder, an SFT run folder (its --out) or checkpoint")
    input: str = setting(help="kafka:<topic> (e.g. kafka:spa.rollouts) or jsonl:<path>")
    out: str = setting(help="run folder (checkpoints, metrics.jsonl); resumes if present")
    steps: int = setting(help="stop cleanly after this many PPO steps", range=(1, BATCHES_MAX))
    # docs/spa-ppo.md#hyperparameters: 32 env groups × 8 samples
    groups_per_step: int = setting(32, help="complete groups per step (G)", range=(1, GROUPS_MAX))
    group_size: int = setting(8, help="records per group (K)", range=(1, GROUP_SIZE_MAX))
    export_every: int = setting(10, help="export + publish every M steps", range=(1, BATCHES_MAX))
    export_root: str = setting("runs/policy", help="ONNX artifacts go to <root>/v<version>/")
    publish: str | None = setting(None, help="PolicyUpdate topic, e.g. spa.policy", metavar="TOPIC")
    start_version: int | None = setting(
        None, help="the SFT export's version (default: the highest v<n> under --export-root, 0 if none)",
        range=(0, VERSION_MAX),
    )  # fmt: skip
    max_staleness: int | None = setting(
        None, help="count records older than this many versions", range=(0, STALENESS_MAX)
    )
    brokers: str | None = setting(None, help="Kafka bootstrap servers (default $KAFKA_BROKERS or 127.0.0.1:9092)")
    dlq: str | None = setting(None, help="rejects: kafka:<topic> or jsonl:<path> (default kafka:spa.dlq / <out>)")
    idle_timeout: float | None = setting(
        None,
        help="seconds without a record before giving up (default: wait)",
        range=(0, IDLE_TIMEOUT_MAX_S),
        above=True,
    )
    max_open_groups: int | None = setting(
        None, help="incomplete groups held (default 4 × G)", range=(1, OPEN_GROUPS_MAX)
    )
    context_window: int = setting(
        0,
        help="the generator's context window in tokens (spa --context-window; 0: whole prompts, as SPA): score each "
        "turn on the prompt it was sampled from (docs/spa-ppo.md#window)",
        range=(0, TOKENS_MAX),
    )
    max_new_tokens: int | None = setting(
        None, help="with --context-window: the generator's tokens per turn", range=(1, TOKENS_MAX)
    )
    ppo: PpoConfig = field(default_factory=PpoConfig)
    seed: int = setting(0, help="initial RNG seed", range=(0, SEED_MAX))
    report_to: tuple[ReportTarget, ...] = setting(("tensorboard",), help=REPORT_TO_HELP)
    logging_dir: str | None = setting(None, help="TensorBoard run folder (default <out>/tensorboard)", metavar="DIR")
    run_name: str | None = setting(None, help="the W&B run's name (default: the --out folder's name)")

    def prompt_budget(self) -> int | None:
        """Prompt tokens the generator kept of each turn (window − new tokens); None: whole prompts."""
        return self.context_window - (self.max_new_tokens or 0) if self.context_window else None


def parse_args(argv: list[str]) -> ServiceConfig:
    """CLI flags → ServiceConfig."""
    p = argparse.ArgumentParser(
        prog="python -m spa_trainer.ppo_service", description="PPO as a service (docs/spa-ppo.md)."
    )
    add_settings(p, ServiceConfig)
    cfg = config_from(ServiceConfig, p.parse_args(argv))
    if "none" in cfg.report_to and len(set(cfg.report_to)) > 1:
        p.error(f"--report-to {' '.join(cfg.report_to)}: none means no destination; give it alone")
    if cfg.context_window != 0:
        if cfg.max_new_tokens is None:
            p.error("--context-window needs --max-new-tokens (the generator keeps window − max new tokens of a prompt)")
        if cfg.context_window <= cfg.max_new_tokens:
            p.error(f"--context-window {cfg.context_window}: must exceed --max-new-tokens {cfg.max_new_tokens}")
        if cfg.ppo.mask != "generated":
            p.error(
                f"--context-window scores each turn on its cut prompt: only --mask generated applies, not {cfg.ppo.mask}"
            )
    return cfg
