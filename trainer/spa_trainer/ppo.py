"""PPO stage: one update from a batch of Rollout records (docs/spa-ppo.md), read top to bottom.

    records ─► staleness histogram ─► std group filter ─► one token sequence per episode
            ─► old log-probs + values (no grad) ─► GAE + masked whitening
            ─► epochs × minibatches × micro-batches of dual-clip PPO (actor) and clipped value
               loss (critic) ─► optimizer steps ─► metrics

Hyperparameters default to SPA's run (docs/spa-ppo.md#hyperparameters) except the loss mask, whose default is
the paper's: only the tokens the policy sampled (`mask_mode="all-after-system"` gives SPA
parity; docs/spa-ppo.md#mask).
The model and tokenizer come in as arguments: any HF causal LM with a chat-template tokenizer.
"""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .models import pick_device
from .ppo_batch import Rollout, RolloutBatch, build_batch, filter_groups, staleness_histogram, total_score
from .ppo_math import (
    LossAgg,
    MaskMode,
    entropy_from_logits,
    gae_advantages_returns,
    low_var_kl,
    masked_mean,
    policy_loss,
    seq_mean_token_mean,
    value_loss,
)
from .value_head import ValueModel, critic_from_actor


@dataclass(frozen=True)
class PpoConfig:
    """PPO hyperparameters; defaults are SPA's (docs/spa-ppo.md#hyperparameters) unless noted."""

    mask_mode: MaskMode = "generated"  # SPA parity: "all-after-system"
    group_keep_ratio: float = 0.25  # rollout_filter_ratio, filter type std
    gamma: float = 1.0
    lam: float = 1.0
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.28
    clip_ratio_c: float = 3.0  # dual clip
    entropy_coeff: float = 0.001
    # k3 KL of the actor to the start model in the actor loss (verl `use_kl_loss`, `low_var_kl`):
    # SPA runs without (0); a small model drifts into text it never saw without it (docs/spa-ppo.md#kl).
    kl_loss_coef: float = 0.0
    cliprange_value: float = 0.5
    actor_lr: float = 1e-6
    critic_lr: float = 1e-5
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    ppo_epochs: int = 1
    mini_batch_size: int = 64  # trajectories per optimizer step (64 = one step per update)
    # How the losses average over a mini-batch: SPA's configured token-mean, or the mean of
    # per-sequence token means its released run computes (docs/spa-ppo.md#aggregation).
    loss_agg: LossAgg = "token-mean"
    # Sequences per forward pass: memory and speed only; either aggregation is computed exactly
    # for any micro-batch size (docs/spa-ppo.md#aggregation).
    micro_batch_size: int = 1
    temperature: float = 1.0  # log-probs at the sampling temperature (docs/spa-ppo.md#losses)


@dataclass
class PpoState:
    """Everything an update uses or mutates. `version` is the trainer's policy version: it starts
    at the version of the loaded checkpoint and grows by one per `ppo_step`. `config` lives here
    because the optimizers were built from its learning rates."""

    config: PpoConfig
    actor: PreTrainedModel
    critic: ValueModel
    actor_optimizer: torch.optim.Optimizer
    critic_optimizer: torch.optim.Optimizer
    reference: PreTrainedModel | None = None  # the frozen start model, with `kl_loss_coef` > 0
    version: int = 0
    step: int = 0

    @property
    def device(self) -> torch.device:
        """Where the actor's weights live."""
        return next(self.actor.parameters()).device


@dataclass(frozen=True)
class PpoStepReport:
    """One update's metrics (flat, verl-style names) and the staleness histogram
    `{trainer version − record policy version: count}` of the consumed records."""

    metrics: dict[str, float]
    staleness: dict[int, int] = field(default_factory=dict)


def init_ppo(
    actor: PreTrainedModel,
    config: PpoConfig | None = None,
    version: int = 0,
    critic: ValueModel | None = None,
    device: torch.device | None = None,
    reference: PreTrainedModel | None = None,
) -> PpoState:
    """Move the actor to `device` (CUDA when present), build the critic from it unless given
    (docs/spa-ppo.md#hyperparameters: same checkpoint, separate model), and create both AdamW
    optimizers. With `kl_loss_coef` > 0 the KL reference is `reference` (a resumed run passes
    the start model) or a frozen copy of `actor`."""
    config = config or PpoConfig()
    device = device or pick_device()
    torch.nn.Module.to(actor, device)  # transformers' decorated `.to` confuses type checkers
    critic = (critic or critic_from_actor(actor)).to(device)
    if config.kl_loss_coef > 0:
        reference = reference if reference is not None else copy.deepcopy(actor)
        torch.nn.Module.to(reference, device)
        reference.eval().requires_grad_(False)
    else:
        reference = None
    return PpoState(
        reference=reference,
        config=config,
        actor=actor,
        critic=critic,
        actor_optimizer=torch.optim.AdamW(
            actor.parameters(), lr=config.actor_lr, betas=config.betas, weight_decay=config.weight_decay
        ),
        critic_optimizer=torch.optim.AdamW(
            critic.parameters(), lr=config.critic_lr, betas=config.betas, weight_decay=config.weight_decay
        ),
        version=version,
    )


def _autocast(device: torch.device) -> torch.autocast:
    # bf16 on CUDA only; CPU runs fp32 so tests are exact.
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def token_log_probs(
    actor: PreTrainedModel, batch: RolloutBatch, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log p(token j+1 | ≤ j), entropy at j), both on the response axis `(B, T − 1)`."""
    with _autocast(batch.input_ids.device):
        out = actor(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
        )
    logits = out.logits[:, :-1].float() / temperature
    targets = batch.input_ids[:, 1:].unsqueeze(-1)
    # gather − logsumexp avoids materialising a second (B, T, V) log-softmax tensor.
    log_probs = logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    return log_probs, (entropy_from_logits(logits) if with_entropy else None)


def _micro_batches(batch: RolloutBatch, rows: torch.Tensor, size: int) -> list[RolloutBatch]:
    return [batch.select(rows[i : i + size]) for i in range(0, len(rows), size)]


@torch.no_grad()
def add_advantages(state: PpoState, batch: RolloutBatch, config: PpoConfig) -> RolloutBatch:
    """Old log-probs and values from the current weights (verl recomputes both rather than
    trusting the generator's), then GAE + masked whitening over the whole batch
    (docs/spa-ppo.md#advantages)."""
    state.actor.eval()
    state.critic.eval()
    old_log_probs, values = [], []
    rows = torch.arange(batch.size, device=batch.input_ids.device)
    for start in range(0, batch.size, config.micro_batch_size):
        micro = batch.select(rows[start : start + config.micro_batch_size])
        log_probs, _ = token_log_probs(state.actor, micro, config.temperature, with_entropy=False)
        with _autocast(micro.input_ids.device):
            v = state.critic.response_values(
                micro.input_ids, micro.attention_mask, micro.position_ids, micro.response_mask
            )
        # select() trimmed shared left padding; pad back so the pieces stack into (B, T − 1).
        trimmed = batch.response_mask.shape[1] - micro.response_mask.shape[1]
        old_log_probs.append(torch.nn.functional.pad(log_probs, (trimmed, 0)))
        values.append(torch.nn.functional.pad(v.float(), (trimmed, 0)))
    old_lp, old_values = torch.cat(old_log_probs), torch.cat(values)
    advantages, returns = gae_advantages_returns(
        batch.token_rewards, old_values, batch.response_mask, config.gamma, config.lam
    )
    extras = {"old_log_probs": old_lp, "old_values": old_values, "advantages": advantages, "returns": returns}
    if state.reference is not None:
        ref_log_probs = []
        for start in range(0, batch.size, config.micro_batch_size):
            micro = batch.select(rows[start : start + config.micro_batch_size])
            log_probs, _ = token_log_probs(state.reference, micro, config.temperature, with_entropy=False)
            trimmed = batch.response_mask.shape[1] - micro.response_mask.shape[1]
            ref_log_probs.append(torch.nn.functional.pad(log_probs, (trimmed, 0)))
        extras["ref_log_probs"] = torch.cat(ref_log_probs)
    return batch.with_extras(**extras)


def actor_micro_loss(state: PpoState, micro: RolloutBatch, config: PpoConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """Dual-clip PPO token-mean loss minus the entropy bonus for one micro-batch (docs/spa-ppo.md#losses)."""
    with_entropy = config.entropy_coeff != 0.0
    log_probs, entropy = token_log_probs(state.actor, micro, config.temperature, with_entropy)
    mask = micro.response_mask
    per_sequence = config.loss_agg == "seq-mean-token-mean"
    pg = policy_loss(
        log_probs, micro.extras["old_log_probs"], micro.extras["advantages"], mask,
        config.clip_ratio_low, config.clip_ratio_high, config.clip_ratio_c, per_sequence=per_sequence,
    )  # fmt: skip
    aggregate = seq_mean_token_mean if per_sequence else masked_mean
    entropy_mean = aggregate(entropy, mask) if entropy is not None else torch.zeros(())
    loss = pg.loss - config.entropy_coeff * entropy_mean
    stats: dict[str, float] = {}
    if "ref_log_probs" in micro.extras:
        kl = aggregate(low_var_kl(log_probs, micro.extras["ref_log_probs"]), mask)
        loss = loss + config.kl_loss_coef * kl
        stats["actor/kl_loss"] = kl.item()
    stats |= {
        "actor/pg_loss": pg.loss.item(),
        "actor/entropy": entropy_mean.item(),
        "actor/pg_clipfrac": pg.clipfrac.item(),
        "actor/pg_clipfrac_lower": pg.clipfrac_lower.item(),
        "actor/ppo_kl": pg.approx_kl.item(),
    }
    return loss, stats


def critic_micro_loss(state: PpoState, micro: RolloutBatch, config: PpoConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped value loss for one micro-batch (docs/spa-ppo.md#losses)."""
    with _autocast(micro.input_ids.device):
        values = state.critic.response_values(
            micro.input_ids, micro.attention_mask, micro.position_ids, micro.response_mask
        )
    loss, clipfrac = value_loss(
        values.float(), micro.extras["old_values"], micro.extras["returns"], micro.response_mask,
        config.cliprange_value, per_sequence=config.loss_agg == "seq-mean-token-mean",
    )  # fmt: skip
    return loss, {
        "critic/vf_loss": loss.item(),
        "critic/vf_clipfrac": clipfrac.item(),
        "critic/vpred_mean": masked_mean(values.float(), micro.response_mask).item(),
    }


def _optimizer_step(params: Sequence[torch.nn.Parameter], optimizer: torch.optim.Optimizer, clip: float) -> float:
    grad_norm = torch.nn.utils.clip_grad_norm_(params, clip)
    if torch.isfinite(grad_norm):  # verl skips the step on a non-finite norm
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(grad_norm)


def update(state: PpoState, batch: RolloutBatch, config: PpoConfig) -> dict[str, float]:
    """`ppo_epochs` passes over the batch in minibatches; one actor and one critic optimizer step
    per minibatch, gradients accumulated over micro-batches weighted by their share of the
    minibatch: of its rows (`seq-mean-token-mean`) or of its trained tokens (`token-mean`), so the
    sum is the minibatch's loss for any micro-batch size (docs/spa-ppo.md#aggregation)."""
    state.actor.train()
    state.critic.train()
    collected: dict[str, list[float]] = defaultdict(list)
    actor_params = [p for p in state.actor.parameters() if p.requires_grad]
    critic_params = [p for p in state.critic.parameters() if p.requires_grad]
    rows = torch.arange(batch.size, device=batch.input_ids.device)
    for _ in range(config.ppo_epochs):
        for start in range(0, batch.size, config.mini_batch_size):
            mini_rows = rows[start : start + config.mini_batch_size]
            mini_tokens = batch.response_mask[mini_rows].sum().clamp(min=1)
            mini_stats: dict[str, float] = defaultdict(float)
            for micro in _micro_batches(batch, mini_rows, config.micro_batch_size):
                if config.loss_agg == "seq-mean-token-mean":
                    share = micro.size / len(mini_rows)
                else:
                    share = float(micro.response_mask.sum() / mini_tokens)
                for loss_fn in (actor_micro_loss, critic_micro_loss):
                    loss, stats = loss_fn(state, micro, config)
                    (loss * share).backward()
                    for k, v in stats.items():
                        mini_stats[k] += v * share
            for k, v in mini_stats.items():
                collected[k].append(v)
            collected["actor/grad_norm"].append(_optimizer_step(actor_params, state.actor_optimizer, config.grad_clip))
            collected["critic/grad_norm"].append(
                _optimizer_step(critic_params, state.critic_optimizer, config.grad_clip)
            )
    return {k: sum(v) / len(v) for k, v in collected.items()}


def ppo_step(state: PpoState, records: Sequence[Rollout], tokenizer: PreTrainedTokenizerBase) -> PpoStepReport:
    """One PPO iteration over `records` (all groups of one rollout round, e.g. 32 groups × 8)
    with `state.config`. Advances `state.version` by one."""
    if not records:
        raise ValueError("ppo_step needs at least one rollout record")
    config = state.config
    started = time.perf_counter()
    staleness = staleness_histogram(records, state.version)
    kept = filter_groups(records, config.group_keep_ratio)
    batch = build_batch(kept, tokenizer, config.mask_mode).to(state.device)
    batch = add_advantages(state, batch, config)
    metrics = update(state, batch, config)
    elapsed = time.perf_counter() - started

    mask = batch.response_mask
    all_scores = [total_score(r) for r in records]
    metrics.update(
        {
            "score/mean": sum(all_scores) / len(all_scores),
            "score/kept_mean": float(batch.scores.mean()),
            "score/success_rate": sum(bool(r["success"]) for r in records) / len(records),
            "filter/kept_groups": float(len({r["group_id"] for r in kept})),
            "filter/kept_trajectories": float(len(kept)),
            "critic/advantages_mean": float(masked_mean(batch.extras["advantages"], mask)),
            "critic/returns_mean": float(masked_mean(batch.extras["returns"], mask)),
            "critic/values_mean": float(masked_mean(batch.extras["old_values"], mask)),
            "response/trained_tokens": float(mask.sum()),
            "perf/tokens": float(batch.attention_mask.sum()),
            # Real (non-pad) tokens of the kept batch per wall-clock second of the whole step.
            "perf/tokens_per_s": float(batch.attention_mask.sum()) / max(elapsed, 1e-9),
            "perf/step_seconds": elapsed,
            "trainer/version": float(state.version),
            "staleness/mean": sum(lag * n for lag, n in staleness.items()) / len(records),
            "staleness/max": float(max(staleness)),
        }
    )
    state.version += 1
    state.step += 1
    return PpoStepReport(metrics=metrics, staleness=staleness)
