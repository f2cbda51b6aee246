"""One PPO step on the tiny Qwen2 model: it runs, it learns in the right direction, masks matter."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from spa_trainer.ppo.batch import build_batch
from spa_trainer.ppo.critic import critic_from_actor
from spa_trainer.ppo.functional import LOSS_AGGS, LossAgg, MaskMode, policy_loss, turn_indicators
from spa_trainer.ppo.step import PpoConfig, PpoState, add_advantages, init_ppo, ppo_step, token_log_probs

from .ppo_rollouts import rollout

CPU = torch.device("cpu")


@pytest.fixture()
def actor(tiny_dir: Path) -> PreTrainedModel:
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)


def _round(groups: int = 4) -> list[dict[str, object]]:
    """`groups` groups of 2; group k's winner scores 10 + 0.1·k, so std grows with k."""
    records = []
    for k in range(groups):
        records.append(rollout(f"w{k}", f"g{k}", ["Right"], [10.0 + 0.1 * k], success=True, policy_version=3))
        records.append(rollout(f"l{k}", f"g{k}", ["Left", "Up"], [-0.1, -0.1], penalty=-0.1, policy_version=2))
    return records


def _sequence_log_prob(actor: PreTrainedModel, tok: PreTrainedTokenizerBase, record: dict[str, object]) -> float:
    batch = build_batch([record], tok, "response-only")
    with torch.no_grad():
        log_probs, _ = token_log_probs(actor, batch, temperature=1.0, with_entropy=False)
    return float(log_probs[batch.response_mask].sum())


def test_ppo_step_runs_with_spa_defaults_and_updates_both_models(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    state = init_ppo(actor, version=3, device=CPU)
    actor_before = {k: v.clone() for k, v in actor.state_dict().items()}
    head_before = state.critic.value_head.weight.clone()
    report = ppo_step(state, _round(groups=4), tiny_tokenizer)
    m = report.metrics
    assert report.staleness == {0: 4, 1: 4}
    assert m["staleness/mean"] == 0.5 and m["staleness/max"] == 1.0
    assert state.version == 4 and state.step == 1
    assert m["filter/kept_groups"] == 1.0 and m["filter/kept_trajectories"] == 2.0  # int(0.25 · 4)
    assert m["score/kept_mean"] == pytest.approx((10.3 - 0.3) / 2)  # g3 has the largest spread
    assert m["score/success_rate"] == 0.5
    for key in ("actor/pg_loss", "actor/entropy", "actor/ppo_kl", "critic/vf_loss", "perf/tokens_per_s"):
        assert math.isfinite(m[key]), key
    # Old log-probs come from the same weights, so the first minibatch is exactly on-policy.
    assert m["actor/ppo_kl"] == pytest.approx(0.0, abs=1e-6)
    assert m["actor/pg_clipfrac"] == 0.0
    assert m["actor/entropy"] > 0.0
    changed = [k for k, v in actor.state_dict().items() if not torch.equal(v, actor_before[k])]
    assert changed, "the actor's weights did not move"
    assert not torch.equal(state.critic.value_head.weight, head_before)


def test_positive_advantage_sequence_gains_log_prob(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    winner = rollout("w", "g", ["Right"], [10.9], success=True)
    loser = rollout("l", "g", ["Left"], [-0.1], penalty=-0.1)
    config = PpoConfig(keep_ratio=1.0, actor_lr=1e-4, micro_batch_size=2)
    state = init_ppo(actor, config, device=CPU)
    before = [_sequence_log_prob(actor, tiny_tokenizer, r) for r in (winner, loser)]
    report = ppo_step(state, [winner, loser], tiny_tokenizer)
    after = [_sequence_log_prob(actor, tiny_tokenizer, r) for r in (winner, loser)]
    assert report.metrics["critic/returns_mean"] > 0
    assert after[0] > before[0], "the winning (positive-advantage) episode should become likelier"
    assert after[1] < before[1], "the losing (negative-advantage) episode should become less likely"


def test_grpo_scores_each_episode_against_its_group_and_trains_no_critic(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    # Group a: a winner and a loser. Group b: every episode loses alike, so it carries no signal;
    # under GAE its low scores would count against it across the batch.
    winner = rollout("w", "a", ["Right"], [10.9], success=True)
    loser = rollout("l", "a", ["Left"], [-0.1], penalty=-0.1)
    flat = [rollout(f"f{i}", "b", ["Up"], [-0.1]) for i in range(2)]
    config = PpoConfig(keep_ratio=1.0, actor_lr=1e-4, micro_batch_size=4, adv_estimator="grpo")
    state = init_ppo(actor, config, device=CPU)
    critic_before = {k: v.clone() for k, v in state.critic.state_dict().items()}
    before = [_sequence_log_prob(actor, tiny_tokenizer, r) for r in (winner, loser, flat[0])]
    batch = build_batch([winner, loser, *flat], tiny_tokenizer, "generated")
    advantages = add_advantages(state, batch, config, ["a", "a", "b", "b"]).extras["advantages"]
    per_row = [float(a[m].unique().item()) for a, m in zip(advantages, batch.response_mask, strict=True)]
    assert per_row == pytest.approx([0.7071, -0.7071, 0.0, 0.0], abs=1e-4)  # ±5.55 / std(10.9, −0.2) = ±1 / √2
    report = ppo_step(state, [winner, loser, *flat], tiny_tokenizer)
    after = [_sequence_log_prob(actor, tiny_tokenizer, r) for r in (winner, loser, flat[0])]
    assert after[0] > before[0] and after[1] < before[1]
    assert all(torch.equal(v, critic_before[k]) for k, v in state.critic.state_dict().items())
    assert "critic/vf_loss" not in report.metrics and "critic/grad_norm" not in report.metrics


def test_left_padding_and_micro_batching_do_not_change_log_probs_or_values(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    records = _round(groups=2)  # one- and two-turn episodes: different lengths, real padding
    whole = init_ppo(actor, PpoConfig(micro_batch_size=4), device=CPU)
    batch = build_batch(records, tiny_tokenizer, "response-only")
    together = add_advantages(whole, batch, whole.config, list(range(batch.size)))
    one_by_one = add_advantages(whole, batch, PpoConfig(micro_batch_size=1), list(range(batch.size)))
    mask = batch.response_mask
    for key in ("old_log_probs", "old_values", "advantages"):
        assert torch.allclose(together.extras[key][mask], one_by_one.extras[key][mask], atol=1e-5), key
    alone = _sequence_log_prob(actor, tiny_tokenizer, records[0])
    assert float(together.extras["old_log_probs"][0][mask[0]].sum()) == pytest.approx(alone, abs=1e-3)


@pytest.mark.parametrize("loss_agg", LOSS_AGGS)
def test_micro_batch_size_changes_no_update(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, loss_agg: LossAgg
) -> None:
    # Either aggregation is the minibatch's: a micro-batch of one sequence (SPA's) and one of 4
    # must give the same losses and gradients, hence the same step.
    runs = []
    for micro in (1, 4):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)
        before = [p.detach().clone() for p in model.parameters()]
        config = PpoConfig(keep_ratio=1.0, actor_lr=1e-3, critic_lr=1e-3, micro_batch_size=micro, loss_agg=loss_agg)
        state = init_ppo(model, config, device=CPU)
        report = ppo_step(state, _round(groups=2), tiny_tokenizer)
        after = [p.detach().clone() for p in state.actor.parameters()]
        assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
        runs.append((report.metrics, after))
    (one, weights_one), (four, weights_four) = runs
    for key in ("actor/pg_loss", "actor/entropy", "critic/vf_loss", "actor/grad_norm", "critic/grad_norm"):
        assert four[key] == pytest.approx(one[key], rel=1e-5, abs=1e-6), key
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(weights_one, weights_four, strict=True))


def test_token_mean_weighs_tokens_and_seq_mean_weighs_sequences(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    # At the only gradient step the ratio is 1, so the policy loss is minus the aggregated
    # advantages. They are whitened over every trained token of the batch, so their token mean is
    # 0; the mean of per-sequence means is not, when sequences differ in length and advantage.
    losses = {}
    for loss_agg in LOSS_AGGS:
        model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)
        state = init_ppo(model, PpoConfig(keep_ratio=1.0, loss_agg=loss_agg), device=CPU)
        losses[loss_agg] = ppo_step(state, _round(groups=2), tiny_tokenizer).metrics["actor/pg_loss"]
    assert losses["token-mean"] == pytest.approx(0.0, abs=1e-5)
    assert abs(losses["seq-mean-token-mean"]) > 1e-3


def test_kl_loss_holds_the_actor_to_the_frozen_start_model(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)
    config = PpoConfig(keep_ratio=1.0, actor_lr=1e-2, kl_loss_coef=0.1)
    state = init_ppo(model, config, device=CPU)
    assert state.reference is not None and state.reference is not state.actor
    start = [p.detach().clone() for p in state.reference.parameters()]
    first = ppo_step(state, _round(groups=2), tiny_tokenizer).metrics
    second = ppo_step(state, _round(groups=2), tiny_tokenizer).metrics
    # The first step's actor is the reference itself; after a step at lr 1e-2 they differ.
    assert first["actor/kl_loss"] == pytest.approx(0.0, abs=1e-7)
    assert second["actor/kl_loss"] > 1e-4
    assert all(torch.equal(a, b) for a, b in zip(start, state.reference.parameters(), strict=True))
    assert not any(p.requires_grad for p in state.reference.parameters())
    # Off by default (SPA): no reference model, no KL metric.
    plain = init_ppo(AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True), PpoConfig(), device=CPU)
    assert plain.reference is None
    assert "actor/kl_loss" not in ppo_step(plain, _round(groups=2), tiny_tokenizer).metrics


def test_several_minibatches_and_epochs_go_off_policy(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    config = PpoConfig(keep_ratio=1.0, actor_lr=1e-4, mini_batch_size=2, micro_batch_size=2, epochs=2)
    state = init_ppo(actor, config, device=CPU)
    report = ppo_step(state, _round(groups=2), tiny_tokenizer)
    # 4 optimizer steps: every minibatch after the first sees weights that moved since the
    # old log-probs were taken.
    assert report.metrics["actor/ppo_kl"] != 0.0
    assert report.metrics["filter/kept_trajectories"] == 4.0


@pytest.mark.parametrize("budget", [None, 40])
def test_log_probs_and_entropy_from_the_kept_columns_equal_full_logits_on_trained_tokens(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase, budget: int | None
) -> None:
    # The LM head runs only on columns where some row trains a token; on every trained token the
    # numbers must be those of the full logits, and 0 elsewhere (one- and two-turn episodes, left
    # padding; with a budget, turn rows).
    batch = build_batch(_round(groups=2), tiny_tokenizer, "generated", prompt_budget=budget)
    mask = batch.response_mask
    assert int(mask.any(dim=0).sum()) < mask.shape[1], "the test needs columns without trained tokens"
    with torch.no_grad():
        log_probs, entropy = token_log_probs(actor, batch, temperature=0.7, with_entropy=True)
        logits = (
            actor(
                input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids
            ).logits[:, :-1]
            / 0.7
        )
    full = torch.log_softmax(logits, dim=-1)
    expected = full.gather(-1, batch.input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert entropy is not None
    assert torch.allclose(log_probs[mask], expected[mask], atol=1e-5)
    assert torch.allclose(entropy[mask], -(full.exp() * full).sum(-1)[mask], atol=1e-5)
    assert not log_probs[~mask.any(dim=0).expand_as(mask)].any()


@pytest.mark.parametrize("mode", ["generated", "response-only", "all-after-system"])
def test_mask_choice_decides_which_tokens_get_gradient(
    actor: PreTrainedModel, tiny_tokenizer: PreTrainedTokenizerBase, mode: MaskMode
) -> None:
    record = rollout("b", "g", ["Left", "Right"], [-0.1, 10.9])
    batch = build_batch([record], tiny_tokenizer, mode)
    log_probs, _ = token_log_probs(actor, batch, temperature=1.0, with_entropy=False)
    log_probs.retain_grad()
    advantages = torch.ones_like(log_probs)
    policy_loss(log_probs, log_probs.detach(), advantages, batch.response_mask).loss.backward()
    assert log_probs.grad is not None
    has_grad = log_probs.grad[0] != 0
    assert torch.equal(has_grad, batch.response_mask[0])
    im_start = tiny_tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert isinstance(im_start, int)
    indicators = turn_indicators(batch.input_ids, im_start)[0, :-1]
    user_positions = (indicators % 2 == 0) & (indicators >= 2)
    assert bool(has_grad[user_positions].any()) == (mode == "all-after-system")
    assert not has_grad[indicators <= 1].any(), "system prompt and padding never get gradient"


def test_critic_is_a_separate_copy_with_a_fresh_scalar_head(actor: PreTrainedModel) -> None:
    critic = critic_from_actor(actor)
    actor_ids = {id(p) for p in actor.parameters()}
    assert not any(id(p) in actor_ids for p in critic.parameters())
    assert critic.value_head.out_features == 1
    assert critic.value_head.bias.abs().sum() == 0
    ids = torch.tensor([[5, 6, 7, 8]])
    mask = torch.tensor([[True, False, True]])
    values = critic.response_values(ids, torch.ones_like(ids), torch.arange(4).unsqueeze(0), mask)
    assert values.shape == (1, 3) and values[0, 1] == 0


@pytest.mark.parametrize("loss_agg", LOSS_AGGS)
def test_turn_rows_with_a_window_larger_than_every_prompt_train_as_one_sequence_per_episode(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, loss_agg: LossAgg
) -> None:
    # A causal model gives turn k's tokens the same log-probs and values inside the whole episode as
    # in a row of its own prefix, and with one reward at the end every token's advantage is R − V_t:
    # so when no prompt is cut, one row per turn must be the same update as one sequence per episode
    # (docs/spa-ppo.md#window). This pins the turn rows' masks, positions, rewards and minibatches,
    # and that seq-mean-token-mean weighs an episode of several turn rows as one sequence.
    runs = []
    for budget in (None, 10_000):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)
        # Two minibatches of 2 episodes (the second one off-policy): turn rows must split by episode.
        config = PpoConfig(
            keep_ratio=1.0, actor_lr=1e-3, critic_lr=1e-3, mini_batch_size=2, micro_batch_size=3,
            prompt_budget=budget, loss_agg=loss_agg,
        )  # fmt: skip
        state = init_ppo(model, config, device=CPU)
        report = ppo_step(state, _round(groups=2), tiny_tokenizer)
        runs.append((report.metrics, [p.detach().clone() for p in state.actor.parameters()], state.critic))
    (seq, weights_seq, critic_seq), (turns, weights_turns, critic_turns) = runs
    for key in ("actor/pg_loss", "actor/entropy", "critic/vf_loss", "actor/grad_norm", "critic/grad_norm"):
        assert turns[key] == pytest.approx(seq[key], rel=1e-4, abs=1e-6), key
    assert turns["response/trained_tokens"] == seq["response/trained_tokens"]
    # 1e-4: the second Adam step amplifies float noise in near-zero gradient entries (one weight
    # differs by 3e-5; with a mis-split minibatch or a shifted mask whole tensors move by ~1e-3).
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(weights_seq, weights_turns, strict=True))
    for a, b in zip(critic_seq.parameters(), critic_turns.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-4)


def test_a_turn_row_is_the_generators_cut_prompt_then_what_it_sampled(
    tiny_tokenizer: PreTrainedTokenizerBase,
) -> None:
    record = rollout("t", "g", ["Right", "Up"], [-0.1, 10.0], success=True)
    messages = record["messages"]
    budget = 12
    batch = build_batch([record], tiny_tokenizer, "generated", prompt_budget=budget)
    assert batch.size == 2 and batch.episodes.tolist() == [0, 0]
    for row, (turn, answer) in enumerate(((2, "Right"), (4, "Up"))):
        # The ONNX policy's prompt: the conversation so far + generation prompt + "<think>", its
        # rightmost `contextWindow − maxNewTokens` tokens, numbered from 0 (onnx-policy.ts).
        prompt = tiny_tokenizer.apply_chat_template(messages[:turn], add_generation_prompt=True, tokenize=False)
        assert isinstance(prompt, str)
        prompt_ids = tiny_tokenizer(prompt + "<think>", add_special_tokens=False)["input_ids"][-budget:]
        sampled = f"go</think><answer>{answer}</answer>"
        sampled_ids = tiny_tokenizer(sampled, add_special_tokens=False)["input_ids"] + [tiny_tokenizer.eos_token_id]
        real = batch.attention_mask[row].bool()
        assert batch.input_ids[row][real].tolist() == prompt_ids + sampled_ids
        assert batch.position_ids[row][real].tolist() == list(range(len(prompt_ids) + len(sampled_ids)))
        # Response entry j trains token j + 1: exactly the sampled tokens are trained.
        trained = batch.input_ids[row, 1:][batch.response_mask[row]].tolist()
        assert trained == sampled_ids
        assert tiny_tokenizer.decode(trained[:-1]) == sampled
        # The episode's score sits on every row's last token, nothing elsewhere.
        assert batch.token_rewards[row, -1] == pytest.approx(9.9)
        assert int((batch.token_rewards[row] != 0).sum()) == 1
    with pytest.raises(ValueError, match="only --mask generated"):
        build_batch([record], tiny_tokenizer, "response-only", prompt_budget=budget)


def test_learning_rates_zero_measure_the_losses_and_move_no_weight(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    # A check's control arm: the same losses as a learning step would measure, no gradient, no step.
    def fresh(lr: float) -> PpoState:
        model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True, dtype=torch.float32)
        return init_ppo(model, PpoConfig(keep_ratio=1.0, actor_lr=lr, critic_lr=lr, kl_loss_coef=0.1), device=CPU)

    frozen, learning = fresh(0.0), fresh(1e-2)
    start = [p.detach().clone() for p in frozen.actor.parameters()]
    measured = ppo_step(frozen, _round(groups=2), tiny_tokenizer).metrics
    trained = ppo_step(learning, _round(groups=2), tiny_tokenizer).metrics
    assert measured["actor/pg_loss"] == pytest.approx(trained["actor/pg_loss"], abs=1e-6)
    assert measured["actor/entropy"] == pytest.approx(trained["actor/entropy"], abs=1e-6)
    assert "actor/grad_norm" not in measured and trained["actor/grad_norm"] > 0
    assert all(torch.equal(a, b) for a, b in zip(start, frozen.actor.parameters(), strict=True))
    assert all(p.grad is None for p in frozen.actor.parameters())
