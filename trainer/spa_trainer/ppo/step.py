"""PPO stage: one update from a batch of Rollout records (docs/spa-ppo.md), read top to bottom.

    records ─► staleness histogram ─► std group filter ─► one token sequence per episode
            ─► old log-probs + values (no grad) ─► GAE + masked whitening (or GRPO: no critic)
            ─► epochs × minibatches × micro-batches of dual-clip PPO (actor) and clipped value
               loss (critic) ─► optimizer steps ─► metrics

Hyperparameters default to SPA's run (docs/spa-ppo.md#hyperparameters) except the loss mask, whose default is
the paper's: only the tokens the policy sampled (`mask="all-after-system"` gives SPA
parity; docs/spa-ppo.md#mask).
The model and tokenizer come in as arguments: any HF causal LM with a chat-template tokenizer.
"""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..cli.errors import EPOCHS_MAX, ROWS_MAX, WEIGHT_MAX
from ..cli.settings import setting
from ..training.data_parallel import Ranks, accumulating, data_parallel, dp_scale, gather_to_all, share, single
from .batch import Rollout, RolloutBatch, build_batch, filter_groups, staleness_histogram, total_score
from .critic import ValueModel, critic_from_actor, response_values
from .functional import (
    AdvEstimator,
    LossAgg,
    MaskMode,
    entropy_from_logits,
    gae_advantages_returns,
    grpo_advantages,
    loss_weights,
    low_var_kl,
    masked_mean,
    policy_loss,
    value_loss,
    weighted_mean,
)


@dataclass(frozen=True)
class PpoConfig:
    """PPO hyperparameters; defaults are SPA's (docs/spa-ppo.md#hyperparameters) unless noted. The
    fields with a `setting` are flags of the PPO service (spa_trainer.cli.settings)."""

    # The paper's mask: only the tokens the policy sampled; SPA parity: "all-after-system".
    mask: MaskMode = setting("generated", help="loss mask (docs/spa-ppo.md#mask; SPA: all-after-system)")
    keep_ratio: float = setting(
        0.25, help="std filter: fraction of groups kept (SPA's rollout_filter_ratio)", range=(0, 1), above=True
    )
    adv_estimator: AdvEstimator = setting(
        "gae",
        help="advantages: gae with the critic (SPA) or grpo, each episode against its group, no critic "
        "(docs/spa-ppo.md#grpo)",
    )
    grpo_std_norm: bool = setting(
        True, help="grpo: divide by the group's std (verl's default); --no-grpo-std-norm centres only (Dr. GRPO)"
    )
    gamma: float = 1.0
    lam: float = 1.0
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.28
    clip_ratio_c: float = 3.0  # dual clip
    entropy_coeff: float = 0.001
    # verl `use_kl_loss`, `low_var_kl`: a small model drifts into text it never saw without it.
    kl_loss_coef: float = setting(
        0.0, help="k3 KL-to-start-model loss coefficient (docs/spa-ppo.md#kl; SPA: 0, off)", range=(0, WEIGHT_MAX)
    )
    cliprange_value: float = 0.5
    actor_lr: float = setting(1e-6, help="actor AdamW learning rate (SPA: 1e-6)", range=(0, 1))
    critic_lr: float = setting(1e-5, help="critic AdamW learning rate (SPA: 1e-5)", range=(0, 1))
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    epochs: int = setting(1, help="passes over each step's episodes (SPA: 1)", range=(1, EPOCHS_MAX))
    mini_batch_size: int = setting(
        64,
        help="episodes per optimizer step; a step's episodes in fewer means fewer steps (SPA: 64, one step)",
        range=(1, ROWS_MAX),
    )
    loss_agg: LossAgg = setting(
        "token-mean", help="loss aggregation (docs/spa-ppo.md#aggregation; SPA's released run: seq-mean-token-mean)"
    )
    # Memory and speed only: either aggregation is exact for any micro-batch size.
    micro_batch_size: int = setting(
        1, help="sequences per forward pass; memory and speed only (docs/spa-ppo.md#aggregation)", range=(1, ROWS_MAX)
    )
    temperature: float = 1.0  # log-probs at the sampling temperature (docs/spa-ppo.md#losses)
    # Prompt tokens the generator kept (its context window − max new tokens): each turn is then
    # scored as the generator saw it, one row per turn (docs/spa-ppo.md#window). None: the whole
    # episode as one sequence, as SPA (whose prompts always fit). Set from the service's
    # --context-window and --max-new-tokens.
    prompt_budget: int | None = None


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
    ranks: Ranks = field(default_factory=single)  # under torchrun: this rank of the data-parallel job
    actor_ddp: torch.nn.Module | None = None  # the actor's DDP wrapper when ranks.parallel
    critic_ddp: torch.nn.Module | None = None

    @property
    def device(self) -> torch.device:
        """Where the actor's weights live."""
        return next(self.actor.parameters()).device

    def trained_actor(self) -> torch.nn.Module:
        """What the update's forward passes call: the actor, or its DDP wrapper (which averages the
        gradients over ranks on backward)."""
        return self.actor if self.actor_ddp is None else self.actor_ddp

    def trained_critic(self) -> torch.nn.Module:
        """The critic, or its DDP wrapper."""
        return self.critic if self.critic_ddp is None else self.critic_ddp


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
    ranks: Ranks | None = None,
) -> PpoState:
    """Move the actor to `device` (CUDA when present; under torchrun the rank's device), build the
    critic from it unless given (docs/spa-ppo.md#hyperparameters: same checkpoint, separate model),
    and create both AdamW optimizers. With `kl_loss_coef` > 0 the KL reference is `reference` (a
    resumed run passes the start model) or a frozen copy of `actor`. With several `ranks`, actor
    and critic are wrapped in DDP (a collective: every rank calls this at the same point)."""
    config = config or PpoConfig()
    ranks = ranks or single()
    device = device or ranks.device
    torch.nn.Module.to(actor, device)  # transformers' decorated `.to` confuses type checkers
    critic = (critic or critic_from_actor(actor)).to(device)
    if config.kl_loss_coef > 0:
        reference = reference if reference is not None else copy.deepcopy(actor)
        torch.nn.Module.to(reference, device)
        reference.eval().requires_grad_(False)
    else:
        reference = None
    parallel = ranks.parallel
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
        ranks=ranks,
        actor_ddp=data_parallel(actor, ranks) if parallel else None,
        critic_ddp=data_parallel(critic, ranks) if parallel else None,
    )


def _autocast(device: torch.device) -> torch.autocast:
    # bf16 on CUDA only; CPU runs fp32 so tests are exact.
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def token_log_probs(
    actor: torch.nn.Module, batch: RolloutBatch, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log p(token j+1 | ≤ j), entropy at j), both on the response axis `(B, T − 1)`, at the
    positions `batch.response_mask` trains and 0 elsewhere. `actor` is a causal LM or its DDP wrapper.

    Only the columns where some row trains a token go through the LM head (`logits_to_keep`, as the
    SFT trainer's `row_losses`): rows are left-padded, so with turn rows that is the last few dozen
    of several hundred positions; the head and softmax over the vocabulary at every prompt position
    cost a third of a step's CPU time on the tiny models (docs/ppo-check.md, eleventh round)."""
    kept = batch.response_mask.any(dim=0).nonzero().squeeze(1)
    with _autocast(batch.input_ids.device):
        out = actor(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
            logits_to_keep=kept,
        )
    logits = out.logits.float() / temperature
    targets = batch.input_ids[:, 1:][:, kept].unsqueeze(-1)
    # gather − logsumexp avoids materialising a second (B, K, V) log-softmax tensor.
    kept_log_probs = logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    shape = batch.response_mask.shape

    def spread(kept_values: torch.Tensor) -> torch.Tensor:
        return kept_values.new_zeros(shape).index_copy(1, kept, kept_values)

    entropy = spread(entropy_from_logits(logits)) if with_entropy else None
    return spread(kept_log_probs), entropy


def _micro_batches(batch: RolloutBatch, rows: torch.Tensor, size: int) -> list[RolloutBatch]:
    return [batch.select(rows[i : i + size]) for i in range(0, len(rows), size)]


@torch.no_grad()
def add_advantages(state: PpoState, batch: RolloutBatch, config: PpoConfig, groups: Sequence[Hashable]) -> RolloutBatch:
    """Old log-probs and values from the current weights (verl recomputes both rather than
    trusting the generator's), then GAE + masked whitening over the whole batch
    (docs/spa-ppo.md#advantages), or with `grpo` each episode's score against its group's
    (`groups[e]`: episode e's group; no critic, values 0; docs/spa-ppo.md#grpo). Data-parallel, each
    rank computes its share of the micro-batches and every rank gets all of them, so the whitening
    sees the whole batch on every rank."""
    gae = config.adv_estimator == "gae"
    state.actor.eval()
    state.critic.eval()
    pieces: dict[int, list[torch.Tensor]] = {}  # micro-batch start → old log-probs, values[, reference log-probs]
    rows = torch.arange(batch.size, device=batch.input_ids.device)
    starts = list(range(0, batch.size, config.micro_batch_size))
    for start in share(starts, state.ranks):
        micro = batch.select(rows[start : start + config.micro_batch_size])
        log_probs, _ = token_log_probs(state.actor, micro, config.temperature, with_entropy=False)
        v = torch.zeros_like(log_probs)
        if gae:
            with _autocast(micro.input_ids.device):
                v = state.critic.response_values(
                    micro.input_ids, micro.attention_mask, micro.position_ids, micro.response_mask
                )
        computed = [log_probs, v.float()]
        if state.reference is not None:
            computed.append(token_log_probs(state.reference, micro, config.temperature, with_entropy=False)[0])
        # select() trimmed shared left padding; pad back so the pieces stack into (B, T − 1).
        trimmed = batch.response_mask.shape[1] - micro.response_mask.shape[1]
        pieces[start] = [torch.nn.functional.pad(t, (trimmed, 0)) for t in computed]
    if state.ranks.parallel:
        mine = {start: [t.cpu() for t in ts] for start, ts in pieces.items()}
        device = batch.input_ids.device
        pieces = {s: [t.to(device) for t in ts] for part in gather_to_all(mine, state.ranks) for s, ts in part.items()}
    old_lp = torch.cat([pieces[start][0] for start in starts])
    old_values = torch.cat([pieces[start][1] for start in starts])
    if gae:
        advantages, returns = gae_advantages_returns(
            batch.token_rewards, old_values, batch.response_mask, config.gamma, config.lam
        )
    else:
        # Rows of an episode are adjacent and carry its score: its first row gives it.
        first = torch.ones_like(batch.episodes, dtype=torch.bool)
        first[1:] = batch.episodes[1:] != batch.episodes[:-1]
        per_episode = grpo_advantages(batch.scores[first].float().cpu(), groups, config.grpo_std_norm)
        advantages = per_episode.to(batch.scores.device)[batch.episodes].unsqueeze(-1) * batch.response_mask
        returns = advantages
    extras = {"old_log_probs": old_lp, "old_values": old_values, "advantages": advantages, "returns": returns}
    if state.reference is not None:
        extras["ref_log_probs"] = torch.cat([pieces[start][2] for start in starts])
    return batch.with_extras(**extras)


def actor_micro_loss(state: PpoState, micro: RolloutBatch, config: PpoConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """Dual-clip PPO token-mean loss minus the entropy bonus for one micro-batch (docs/spa-ppo.md#losses)."""
    with_entropy = config.entropy_coeff != 0.0
    log_probs, entropy = token_log_probs(state.trained_actor(), micro, config.temperature, with_entropy)
    mask = micro.response_mask
    weights = micro.extras["loss_weights"]
    pg = policy_loss(
        log_probs, micro.extras["old_log_probs"], micro.extras["advantages"], mask,
        config.clip_ratio_low, config.clip_ratio_high, config.clip_ratio_c, weights=weights,
    )  # fmt: skip
    entropy_mean = weighted_mean(entropy, weights) if entropy is not None else torch.zeros(())
    loss = pg.loss - config.entropy_coeff * entropy_mean
    stats: dict[str, float] = {}
    if "ref_log_probs" in micro.extras:
        kl = weighted_mean(low_var_kl(log_probs, micro.extras["ref_log_probs"]), weights)
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
        values = response_values(
            state.trained_critic(), micro.input_ids, micro.attention_mask, micro.position_ids, micro.response_mask
        )
    loss, clipfrac = value_loss(
        values.float(), micro.extras["old_values"], micro.extras["returns"], micro.response_mask,
        config.cliprange_value, weights=micro.extras["loss_weights"],
    )  # fmt: skip
    return loss, {
        "critic/vf_loss": loss.item(),
        "critic/vf_clipfrac": clipfrac.item(),
        "critic/vpred_mean": masked_mean(values.float(), micro.response_mask).item(),
    }


def _frozen(state: PpoState) -> bool:
    """Every learning rate 0 (a check's control arm): AdamW then moves no weight, so `update` only
    measures the losses, without backward passes or optimizer steps (single process only: under DDP
    every rank must take part in each backward)."""
    groups = [g for o in (state.actor_optimizer, state.critic_optimizer) for g in o.param_groups]
    return not state.ranks.parallel and all(g["lr"] == 0 for g in groups)


def _optimizer_step(params: Sequence[torch.nn.Parameter], optimizer: torch.optim.Optimizer, clip: float) -> float:
    grad_norm = torch.nn.utils.clip_grad_norm_(params, clip)
    if torch.isfinite(grad_norm):  # verl skips the step on a non-finite norm
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(grad_norm)


def sum_by_key(stats: dict[str, float], ranks: Ranks) -> dict[str, float]:
    """Every rank's `stats` summed key by key (a rank without micro-batches has none), in rank
    0's key order; `stats` itself for a single rank."""
    if not ranks.parallel:
        return stats
    total: dict[str, float] = {}
    for part in gather_to_all(dict(stats), ranks):
        for k, v in part.items():
            total[k] = total.get(k, 0.0) + v
    return total


def _join_with_zeros(state: PpoState, with_critic: bool) -> None:
    """A rank without a micro-batch in a minibatch still joins the gradient all-reduces: one
    forward of each trained model on a two-token input, backward of zero times its output."""
    ids = torch.zeros((1, 2), dtype=torch.long, device=state.device)
    mask, positions = torch.ones_like(ids), torch.arange(2, device=state.device).unsqueeze(0)
    out = state.trained_actor()(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False)
    (out.logits.sum() * 0.0).backward()
    if with_critic:
        (state.trained_critic()(ids, mask, positions).sum() * 0.0).backward()


def update(state: PpoState, batch: RolloutBatch, config: PpoConfig) -> dict[str, float]:
    """`epochs` passes over the batch in minibatches; one actor and one critic optimizer step
    per minibatch, gradients accumulated over micro-batches weighted by their share of the
    minibatch's loss weights (`loss_weights`: per episode with `seq-mean-token-mean`, per trained
    token with `token-mean`), so the sum is the minibatch's loss for any micro-batch size
    (docs/spa-ppo.md#aggregation).

    Data-parallel, each rank trains micro-batches i ≡ rank (mod world size) of every minibatch,
    with the same weights times the world size, so DDP's average over ranks is the single-process
    gradient; each minibatch's metrics are summed over every rank's micro-batches."""
    ranks = state.ranks
    actor, critic = state.trained_actor(), state.trained_critic()
    actor.train()
    critic.train()
    collected: dict[str, list[float]] = defaultdict(list)
    actor_params = [p for p in state.actor.parameters() if p.requires_grad]
    critic_params = [p for p in state.critic.parameters() if p.requires_grad]
    rows = torch.arange(batch.size, device=batch.input_ids.device)
    episodes = int(batch.episodes.max()) + 1
    batch = batch.with_extras(
        loss_weights=loss_weights(batch.response_mask, batch.episodes, config.mini_batch_size, config.loss_agg)
    )
    with_critic = config.adv_estimator == "gae"  # grpo trains no critic
    trained = ((actor_micro_loss, actor), (critic_micro_loss, critic)) if with_critic else ((actor_micro_loss, actor),)
    frozen = _frozen(state)
    for _ in range(config.epochs):
        # A minibatch is `mini_batch_size` episodes: their rows (one, or one per turn).
        for start in range(0, episodes, config.mini_batch_size):
            in_mini = (batch.episodes >= start) & (batch.episodes < start + config.mini_batch_size)
            mini_rows = rows[in_mini.to(rows.device)]
            mini_stats: dict[str, float] = defaultdict(float)
            mine = share(_micro_batches(batch, mini_rows, config.micro_batch_size), ranks)
            # The actor's micro-batches, then the critic's (the models are independent): each DDP
            # wrapper's collectives then come in the same order on every rank.
            for loss_fn, model in trained:
                for i, micro in enumerate(mine):
                    weight = float(micro.extras["loss_weights"].sum())
                    with torch.no_grad() if frozen else accumulating(model, last=i == len(mine) - 1):
                        loss, stats = loss_fn(state, micro, config)
                        if not frozen:
                            (loss * weight * dp_scale(ranks)).backward()
                    for k, v in stats.items():
                        mini_stats[k] += v * weight
            if not mine and ranks.parallel:
                _join_with_zeros(state, with_critic)
            for k, v in sum_by_key(mini_stats, ranks).items():
                collected[k].append(v)
            if frozen:
                continue
            collected["actor/grad_norm"].append(_optimizer_step(actor_params, state.actor_optimizer, config.grad_clip))
            if with_critic:
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
    kept = filter_groups(records, config.keep_ratio)
    batch = build_batch(kept, tokenizer, config.mask, config.prompt_budget).to(state.device)
    batch = add_advantages(state, batch, config, [r["group_id"] for r in kept])
    metrics = update(state, batch, config)
    elapsed = time.perf_counter() - started

    mask = batch.response_mask
    all_scores = [total_score(r) for r in records]
    metrics.update(
        {
            "score/mean": sum(all_scores) / len(all_scores),
            "score/kept_mean": sum(total_score(r) for r in kept) / len(kept),
            "score/success_rate": sum(bool(r["success"]) for r in records) / len(records),
            "score/format_valid_turns": format_valid_turns(records),
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


FORMAT_PENALTY = -0.1
"""What SPA's rollout charges a turn whose response breaks the format (docs/spa-ppo.md#sequence)."""


def format_valid_turns(records: Sequence[Rollout]) -> float:
    """The share of the records' turns that followed the format: each bad turn cost `FORMAT_PENALTY`."""
    turns = sum(int(r.get("num_turns") or len(r["turn_rewards"])) for r in records)
    bad = sum(round(float(r["penalty"]) / FORMAT_PENALTY) for r in records)
    return 1.0 - bad / turns if turns > 0 else 1.0
