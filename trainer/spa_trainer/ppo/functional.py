"""The PPO stage's math as small pure torch functions (docs/spa-ppo.md, verl @ `1e47e41`).

Shapes: a batch is `(B, T)` token ids, left padded. Everything the losses see is on the
*response axis* of length `T − 1`: entry j belongs to predicting token j+1 from token j
(`responses = input_ids[:, 1:]`, docs/spa-ppo.md#sequence). Each function says which axis it expects.
Worked numbers for every function: docs/spa-testvectors.md#ppo and `tests/test_ppo_math.py`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import torch

MaskMode = Literal["generated", "response-only", "all-after-system"]
"""Which tokens the PPO loss trains (docs/spa-ppo.md#mask):
`generated` (default): only the tokens the policy sampled — each assistant turn's continuation
and the end-of-turn token — the paper's §2.3 "answer tokens" (built in `ppo_batch`).
`response-only`: RAGEN's assistant-turn mask, which also trains the role header
(`<|im_start|>assistant\n`), the `<think>` the generation prompt supplies and the template's
newline after `<|im_end|>`: tokens the policy never sampled.
`all-after-system`: every token after the system message, user/env tokens included, which is
what SPA's PPO run does (`enable_response_mask: False`)."""

LossAgg = Literal["token-mean", "seq-mean-token-mean"]
"""How a loss averages over a mini-batch (docs/spa-ppo.md#aggregation): `token-mean` over all its
trained tokens (SPA's configured `loss_agg_mode`, default) or `seq-mean-token-mean`, the mean over
its episodes of each episode's token mean, which SPA's released run computes (verl's per-micro-batch
token mean with a micro-batch of one sequence, a whole episode there)."""

LOSS_AGGS: tuple[LossAgg, ...] = ("token-mean", "seq-mean-token-mean")

MASK_MODES: tuple[MaskMode, ...] = ("generated", "response-only", "all-after-system")
TURN_MASK_MODES: tuple[MaskMode, ...] = ("response-only", "all-after-system")
"""The modes computed from turn indicators (`loss_mask`)."""


# --- masks and scores (docs/spa-ppo.md#sequence) -------------------------------------------------------


def turn_indicators(input_ids: torch.Tensor, im_start_id: int) -> torch.Tensor:
    """`cumsum(input_ids == <|im_start|>)` over `(B, T)`: 0 = left padding, 1 = system,
    even ≥ 2 = user turns, odd ≥ 3 = assistant turns (docs/spa-ppo.md#sequence)."""
    return torch.cumsum((input_ids == im_start_id).long(), dim=-1)


def loss_mask(indicators: torch.Tensor, mode: MaskMode) -> torch.Tensor:
    """Boolean mask on the response axis `(B, T − 1)` from `(B, T)` turn indicators.

    Entry j decides whether predicting token j+1 is trained, judged by token j's turn, hence
    the `[:, :-1]` (RAGEN `get_masks_and_scores`, docs/spa-testvectors.md#ppo-masks).
    """
    after_system = indicators > 1
    if mode == "all-after-system":
        mask = after_system
    elif mode == "response-only":
        mask = after_system & (indicators % 2 == 1)
    else:
        raise ValueError(f"mask mode {mode!r}: expected one of {TURN_MASK_MODES}")
    return mask[:, :-1]


def score_tensor(total_scores: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Token-level rewards on the response axis `(B, T − 1)` from per-trajectory totals `(B,)`.

    Zeros except `Σ turn rewards + penalty` at the last token of each row (the last real token,
    because rows are left padded), then `[:, 1:]`, so the reward sits at response index T − 2
    (docs/spa-ppo.md#sequence: `use_turn_scores False`, identity normalisation, no KL reward).
    """
    scores = torch.zeros(total_scores.shape[0], seq_len, dtype=total_scores.dtype, device=total_scores.device)
    scores[:, -1] = total_scores
    return scores[:, 1:]


# --- advantages (docs/spa-ppo.md#advantages) ----------------------------------------------------------------


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the entries where `mask` is set, across the whole tensor (verl `masked_mean`)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum()


def loss_weights(mask: torch.Tensor, episodes: torch.Tensor, mini_batch_size: int, loss_agg: LossAgg) -> torch.Tensor:
    """Each trained token's weight in its minibatch's loss, on `(B, T − 1)`; a minibatch is
    `mini_batch_size` consecutive episodes (`episodes[b]`: row b's episode, rows of an episode
    adjacent) and its weights sum to 1 (docs/spa-ppo.md#aggregation). `token-mean`: 1 / the
    minibatch's trained tokens. `seq-mean-token-mean`: 1 / (the episode's trained tokens × the
    minibatch's episodes), so every episode weighs the same whether it is one row or one row per
    turn; an episode without trained tokens counts as 0."""
    mask = mask.float()
    row_tokens = mask.sum(dim=-1)
    minibatch = torch.div(episodes, mini_batch_size, rounding_mode="floor")
    if loss_agg == "token-mean":
        per_row = torch.zeros(int(minibatch.max()) + 1, device=mask.device).index_add_(0, minibatch, row_tokens)
        per_row = per_row[minibatch]
    else:
        count = int(episodes.max()) + 1
        episode_tokens = torch.zeros(count, device=mask.device).index_add_(0, episodes, row_tokens)
        minibatch_of_episode = torch.div(
            torch.arange(count, device=mask.device), mini_batch_size, rounding_mode="floor"
        )
        in_minibatch = torch.bincount(minibatch_of_episode)[minibatch]
        per_row = episode_tokens[episodes] * in_minibatch
    return mask / per_row.clamp(min=1).unsqueeze(-1)


def weighted_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """`Σ weights·values / Σ weights`: a micro-batch's share of its minibatch's loss, per unit of
    weight (`loss_weights`); 0 where no weight is set."""
    return (values * weights).sum() / weights.sum().clamp(min=1e-12)


def masked_var(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Unbiased (Bessel-corrected) variance over the masked entries (verl `masked_var`)."""
    count = mask.sum()
    if count < 2:
        raise ValueError(f"masked variance needs at least 2 masked entries, got {int(count)}")
    centered = values - masked_mean(values, mask)
    return masked_mean(centered**2, mask) * (count / (count - 1))


def masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`(x − mean)·rsqrt(var + 1e-8)` with masked mean/unbiased variance; applied to every entry,
    masked or not (the unmasked ones are never used downstream) — verl `masked_whiten`."""
    return (values - masked_mean(values, mask)) * torch.rsqrt(masked_var(values, mask) + 1e-8)


def gae_advantages_returns(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(whitened advantages, returns), both `(B, T − 1)`.

    verl `1e47e41` `compute_gae_advantage_return`: plain TRL GAE over **all** positions (masked
    ones included — the mask-skipping variant came later in verl), returns = raw advantages +
    values, then masked whitening of the advantages over the whole batch. `values` must already
    be multiplied by the mask (the critic does that, docs/spa-ppo.md#advantages). With γ = λ = 1 and one
    terminal reward R this gives `A_t = R − V_t` and `returns_t = R`.
    """
    with torch.no_grad():
        last_gae = torch.zeros_like(token_rewards[:, 0])
        steps = token_rewards.shape[-1]
        reversed_advantages = []
        for t in reversed(range(steps)):
            next_value = values[:, t + 1] if t < steps - 1 else torch.zeros_like(last_gae)
            delta = token_rewards[:, t] + gamma * next_value - values[:, t]
            last_gae = delta + gamma * lam * last_gae
            reversed_advantages.append(last_gae)
        advantages = torch.stack(reversed_advantages[::-1], dim=1)
        returns = advantages + values
        return masked_whiten(advantages, mask), returns


AdvEstimator = Literal["gae", "grpo"]
"""How advantages are estimated (docs/spa-ppo.md#advantages): `gae` with the critic (SPA's run) or
`grpo`, each episode's score against its group's (docs/spa-ppo.md#grpo)."""

ADV_ESTIMATORS: tuple[AdvEstimator, ...] = ("gae", "grpo")


def grpo_advantages(scores: torch.Tensor, groups: Sequence[Hashable], std_norm: bool = True) -> torch.Tensor:
    """Per-episode advantages `(E,)` from episode scores `(E,)` and each episode's group: the score
    minus its group's mean, divided by the group's unbiased std + 1e-6 when `std_norm` (verl
    `compute_grpo_outcome_advantage`, `norm_adv_by_std_in_grpo`). A one-episode group gets mean 0
    and std 1, as verl's. Without `std_norm` (Dr. GRPO) a group whose episodes differ only by a
    step penalty keeps that difference small instead of blowing it up to ±1."""
    if scores.shape[0] != len(groups):
        raise ValueError(f"{scores.shape[0]} scores but {len(groups)} group ids")
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    advantages = torch.empty_like(scores)
    for rows in members.values():
        s = scores[rows]
        mean, std = (s.mean(), s.std()) if len(rows) > 1 else (torch.zeros(()), torch.ones(()))
        advantages[rows] = (s - mean) / (std + 1e-6) if std_norm else s - mean
    return advantages


# --- losses (docs/spa-ppo.md#losses) -----------------------------------------------------------------


@dataclass(frozen=True)
class PolicyLoss:
    """Actor loss pieces: `loss` (token-mean, differentiable), per-token `token_losses`, and the
    verl diagnostics `clipfrac` (PPO clip active), `clipfrac_lower` (dual clip active),
    `approx_kl` (masked mean of old − new log-prob)."""

    loss: torch.Tensor
    token_losses: torch.Tensor
    clipfrac: torch.Tensor
    clipfrac_lower: torch.Tensor
    approx_kl: torch.Tensor


def dual_clip_token_losses(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    clip_c: float = 3.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(per-token loss, PPO-clip-active flags, dual-clip-active flags) — docs/spa-testvectors.md#ppo-loss.

    `L = max(−A·r, −A·clip(r, 1 − low, 1 + high))`; for A < 0 additionally `min(L, −c·A)`, which
    bounds the loss of a very unlikely-now token with negative advantage (verl `compute_policy_loss`).
    """
    ratio = torch.exp(log_probs - old_log_probs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    ppo_clipped = torch.maximum(unclipped, clipped)
    dual_bound = -advantages * clip_c
    dual_clipped = torch.minimum(ppo_clipped, dual_bound)
    negative = advantages < 0
    losses = torch.where(negative, dual_clipped, ppo_clipped)
    return losses, clipped > unclipped, (ppo_clipped > dual_bound) & negative


def policy_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    clip_c: float = 3.0,
    weights: torch.Tensor | None = None,
) -> PolicyLoss:
    """Dual-clip PPO loss aggregated `token-mean` over `mask` (docs/spa-ppo.md#losses), or with
    `weights` (`loss_weights`) their weighted mean."""
    losses, clip_active, dual_active = dual_clip_token_losses(
        log_probs, old_log_probs, advantages, clip_low, clip_high, clip_c
    )
    return PolicyLoss(
        loss=masked_mean(losses, mask) if weights is None else weighted_mean(losses, weights),
        token_losses=losses,
        clipfrac=masked_mean(clip_active.float(), mask),
        clipfrac_lower=masked_mean(dual_active.float(), mask),
        approx_kl=masked_mean(old_log_probs - log_probs, mask).detach(),
    )


def low_var_kl(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π ‖ π_ref) from sampled tokens: `r − log r − 1` with
    `r = π_ref / π`, clamped to [−10, 10] (verl `kl_penalty` "low_var_kl", Schulman's k3):
    ≥ 0, 0 where the two agree, unbiased for tokens sampled from π (docs/spa-ppo.md#kl)."""
    log_ratio = ref_log_probs - log_probs
    return torch.clamp(torch.exp(log_ratio) - log_ratio - 1.0, min=-10.0, max=10.0)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-position entropy of the softmax over the last axis: `logsumexp(z) − Σ softmax(z)·z`."""
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(dim=-1)


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    cliprange_value: float = 0.5,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, clipfrac): `0.5 × token-mean(max((v − R)², (clip(v, v_old ± c) − R)²))` (verl
    `compute_value_loss`, docs/spa-ppo.md#losses); `weights` as in `policy_loss`."""
    clipped = old_values + torch.clamp(values - old_values, -cliprange_value, cliprange_value)
    unclipped_sq = (values - returns) ** 2
    clipped_sq = (clipped - returns) ** 2
    worst = torch.maximum(unclipped_sq, clipped_sq)
    loss = 0.5 * (masked_mean(worst, mask) if weights is None else weighted_mean(worst, weights))
    return loss, masked_mean((clipped_sq > unclipped_sq).float(), mask)


# --- group filter (docs/spa-ppo.md#group-filter, docs/spa-testvectors.md#group-filter) ----------------

G = TypeVar("G", bound=Hashable)


def group_score_std(scores: Sequence[float]) -> float:
    """Unbiased std of one group's total scores (torch `std`); a single-member group has no
    spread, so 0 (torch would give NaN, which `topk` would rank first)."""
    if len(scores) < 2:
        return 0.0
    return float(torch.tensor(scores, dtype=torch.float64).std())


def select_groups_by_std(group_scores: Sequence[tuple[G, Sequence[float]]], keep_ratio: float) -> list[G]:
    """The ids of the `int(keep_ratio · n_groups)` groups with the largest in-group score std
    (RAGEN `rollout_filter_type std`), best first.

    Ties (notably std-0 groups, whose members all scored the same and so carry no advantage
    signal) are broken by input order: a stable sort keeps the earlier group. RAGEN uses
    `torch.topk`, whose order among equal values is unspecified. A std-0 group is therefore
    kept only when fewer than `k` groups have positive std (docs/spa-testvectors.md#group-filter). At least one group
    is kept so an update never runs on an empty batch (RAGEN would keep 0 when ratio·n < 1).
    """
    if not 0.0 < keep_ratio <= 1.0:
        raise ValueError(f"keep_ratio {keep_ratio}: expected a fraction in (0, 1], e.g. 0.25")
    ids = [gid for gid, _ in group_scores]
    if len(set(ids)) != len(ids):
        raise ValueError("group ids must be unique; merge a group's scores before filtering")
    keep = max(1, int(keep_ratio * len(ids))) if ids else 0
    stds = torch.tensor([group_score_std(s) for _, s in group_scores], dtype=torch.float64)
    order = torch.sort(stds, descending=True, stable=True).indices[:keep]
    return [ids[i] for i in order.tolist()]
