"""The trainer check: a few SFT and PPO steps of a model on the device (bf16 autocast on CUDA, as the
trainer runs there) against the same steps in fp32 on CPU, from the same weights and rows.

Both runs call the trainer's own step functions (`sft.train.train_step`, `ppo.step.ppo_step`), so
what passes here is the code path `spa run --device cuda` trains with. Figures: the losses per step
(device, then CPU), the worst excess over the tolerance, tokens/s on the device (real tokens per
second of a whole step, the first step left out as the warm-up).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from ...data.sft_rows import SftRow
from ...models.load import load_policy
from ...models.tiny_corpus import sokoban_sft_rows
from ...ppo.step import PpoConfig, init_ppo, ppo_step
from ...sft.config import SftConfig
from ...sft.train import Encoded, make_encoder, train_step
from .rows import TOLERANCE, Row, model_folder

BATCH = 4  # rows per SFT step, one forward pass
SFT_LR = 1e-3  # large enough that the steps move the weights, so step 2+ compare updated models
PPO_GROUP = 4  # episodes per PPO step (one group)


@dataclass(frozen=True)
class StepRun:
    """Per step: the compared figures (name → value), and the device's tokens/s."""

    figures: list[dict[str, float]]
    tokens_per_s: list[float]


def sft_steps(folder: Path, device: torch.device, steps: int) -> StepRun:
    """`steps` SFT steps of BATCH world-model rows each, the trainer's step function."""
    torch.manual_seed(0)
    model, tokenizer, _ = load_policy(str(folder), device)
    cfg = SftConfig(input="jsonl:-", lr=SFT_LR, batch_size=BATCH, micro_batch_size=BATCH, max_length=512)
    encode = make_encoder(cfg, tokenizer)
    examples = [Encoded.of(encode(SftRow.from_dict(r))) for r in sokoban_sft_rows(BATCH * steps)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    figures: list[dict[str, float]] = []
    rates: list[float] = []
    for step in range(steps):
        batch = examples[step * BATCH : (step + 1) * BATCH]
        started = time.perf_counter()
        loss, grad_norm = train_step(model, batch, optimizer, scheduler, cfg)  # floats: the device has synced
        rates.append(sum(len(ex.input_ids) for ex in batch) / (time.perf_counter() - started))
        figures.append({"loss": loss, "grad_norm": grad_norm})
    return StepRun(figures, rates)


def episodes(step: int) -> list[dict[str, Any]]:
    """One group of PPO_GROUP Rollout records: the world-model rows' prompts answered with their
    responses, rewarded differently so the advantages are not all zero."""
    rows = sokoban_sft_rows(PPO_GROUP * (step + 1))[PPO_GROUP * step :]
    answers = ["Up", "Down", "Left", "Right"]
    return [
        {
            "trajectory_id": f"t{step}-{i}",
            "group_id": f"g{step}",
            "env": "sokoban",
            "seed": 10_000 + i,
            "policy_version": step,
            "messages": [
                *cast(list[dict[str, str]], row["prompt"]),
                {"role": "assistant", "content": str(row["response"]).replace("Up</answer>", f"{answers[i]}</answer>")},
            ],
            "turn_rewards": [1.0 - 0.4 * i],
            "penalty": 0.0,
            "score": 1.0 - 0.4 * i,
            "success": i == 0,
            "num_turns": 1,
            "created_at": 0,
        }
        for i, row in enumerate(rows)
    ]


def ppo_steps(folder: Path, device: torch.device, steps: int) -> StepRun:
    """`steps` PPO steps (GAE with the critic, SPA's losses) of one group each, the trainer's step function."""
    torch.manual_seed(0)
    actor, tokenizer, _ = load_policy(str(folder), device)
    config = PpoConfig(
        actor_lr=1e-4, critic_lr=1e-4, keep_ratio=1.0, mini_batch_size=PPO_GROUP, micro_batch_size=PPO_GROUP
    )
    state = init_ppo(actor, config, device=device)
    figures: list[dict[str, float]] = []
    rates: list[float] = []
    for step in range(steps):
        metrics = ppo_step(state, episodes(step), tokenizer).metrics
        keys = ("actor/entropy", "critic/vf_loss", "actor/pg_loss")  # the first is printed: pg_loss starts near 0
        figures.append({k.split("/")[1]: metrics[k] for k in keys})
        rates.append(metrics["perf/tokens_per_s"])
    return StepRun(figures, rates)


def compare(name: str, device: str, run: Callable[[Path, torch.device, int], StepRun], folder: Path, steps: int) -> Row:
    """One row: `run` on the device against `run` in fp32 on CPU."""
    started = time.perf_counter()
    got = run(folder, torch.device(device), steps)
    want = run(folder, torch.device("cpu"), steps)
    tolerance = TOLERANCE[device]
    pairs = [(k, g[k], w[k]) for g, w in zip(got.figures, want.figures, strict=True) for k in w]
    finite = all(math.isfinite(g) for _, g, _ in pairs)
    excess = max(tolerance.excess(g, w) for _, g, w in pairs)
    key = next(iter(want.figures[0]))
    rate = statistics.median(got.tokens_per_s[1:] or got.tokens_per_s)
    figures = (
        f"{key} {' '.join(f'{f[key]:.4f}' for f in got.figures)} (cpu fp32 {' '.join(f'{f[key]:.4f}' for f in want.figures)}); "
        f"worst excess over tolerance {excess:+.1e}; {rate:,.0f} tok/s; {time.perf_counter() - started:.0f} s"
    )
    ok = finite and excess <= 0
    detail = (
        "" if ok else ("a loss is not finite" if not finite else f"beyond rtol {tolerance.rtol}, atol {tolerance.atol}")
    )
    return Row(name, device, "pass" if ok else "fail", figures, detail)


def trainer_rows(device: str, models: list[str], steps: int) -> Iterator[Row]:
    """SFT and PPO rows for each model, each as soon as it is measured."""
    for model in models:
        folder = model_folder(model)
        yield compare(f"trainer sft {model}", device, sft_steps, folder, steps)
        yield compare(f"trainer ppo {model}", device, ppo_steps, folder, steps)
