"""PPO math against the worked numbers of docs/spa-testvectors.md#ppo (masks, scores, GAE, losses, group filter)."""

from __future__ import annotations

import math
from typing import cast

import pytest
import torch

from spa_trainer.ppo.functional import (
    MaskMode,
    dual_clip_token_losses,
    entropy_from_logits,
    gae_advantages_returns,
    grpo_advantages,
    loss_mask,
    loss_weights,
    low_var_kl,
    masked_mean,
    masked_var,
    masked_whiten,
    policy_loss,
    score_tensor,
    select_groups_by_std,
    turn_indicators,
    value_loss,
)

# docs/spa-testvectors.md#ppo-masks toy sequence: P P S sys E n S usr E n S a1 a2 E n
P, S, E, N, SYS, USR, A1, A2 = 0, 1, 2, 3, 4, 5, 6, 7
TOY = torch.tensor([[P, P, S, SYS, E, N, S, USR, E, N, S, A1, A2, E, N]])


def test_turn_indicators_are_the_cumsum_of_im_start() -> None:
    expected = [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3]
    assert turn_indicators(TOY, S).tolist() == [expected]


def test_all_after_system_mask_matches_testcases_7_1() -> None:
    mask = loss_mask(turn_indicators(TOY, S), "all-after-system")
    assert mask.int().tolist() == [[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]]


def test_response_only_mask_matches_testcases_7_1() -> None:
    mask = loss_mask(turn_indicators(TOY, S), "response-only")
    assert mask.int().tolist() == [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]]


def test_unknown_mask_mode_names_the_choices() -> None:
    with pytest.raises(ValueError, match="response-only"):
        # deliberately not a MaskMode: the run-time check is what is under test
        loss_mask(turn_indicators(TOY, S), cast(MaskMode, "assistant"))


def test_score_sits_at_response_index_13() -> None:
    r = -0.2 + 10.9
    scores = score_tensor(torch.tensor([r - 0.1], dtype=torch.float64), seq_len=15)
    assert scores.shape == (1, 14)
    assert scores[0, 13].item() == pytest.approx(10.6, abs=1e-12)
    assert scores[0, :13].abs().sum().item() == 0.0


GAE_MASK = torch.tensor([[1, 1, 0, 1, 1, 1]], dtype=torch.bool)
GAE_VALUES = torch.tensor([[0.5, 0.6, 0.7, 0.7, 0.8, 0.9]], dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gae_and_whitening_match_testcases_7_2(dtype: torch.dtype) -> None:
    r = -0.2 + 10.9
    assert r == 10.700000000000001
    rewards = torch.zeros(1, 6, dtype=dtype)
    rewards[0, -1] = r
    values = (GAE_VALUES * GAE_MASK).to(dtype)
    advantages, returns = gae_advantages_returns(rewards, values, GAE_MASK)
    assert returns[0].tolist() == pytest.approx([10.7] * 6, abs=1e-5)
    expected = [1.264911, 0.632456, 4.427188, 0.0, -0.632455, -1.264911]
    assert advantages[0].tolist() == pytest.approx(expected, abs=1e-5)


def test_raw_gae_is_r_minus_v() -> None:
    # Undo the whitening by whitening the expected raw advantages the same way.
    rewards = torch.zeros(1, 6, dtype=torch.float64)
    rewards[0, -1] = 10.7
    values = GAE_VALUES * GAE_MASK
    raw = torch.tensor([[10.2, 10.1, 10.7, 10.0, 9.9, 9.8]], dtype=torch.float64)
    advantages, _ = gae_advantages_returns(rewards, values, GAE_MASK)
    assert torch.allclose(advantages, masked_whiten(raw, GAE_MASK), atol=1e-9)


def test_gae_discounts_when_gamma_below_one() -> None:
    rewards = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    values = torch.zeros(1, 3, dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.bool)
    _, returns = gae_advantages_returns(rewards, values, mask, gamma=0.5, lam=1.0)
    assert returns[0].tolist() == pytest.approx([0.25, 0.5, 1.0])


def test_masked_var_is_unbiased_and_needs_two_entries() -> None:
    x = torch.tensor([1.0, 3.0, 100.0], dtype=torch.float64)
    mask = torch.tensor([True, True, False])
    assert masked_mean(x, mask).item() == 2.0
    assert masked_var(x, mask).item() == pytest.approx(2.0)  # ((1)^2 + (1)^2) / (2 − 1)
    with pytest.raises(ValueError, match="at least 2"):
        masked_var(x, torch.tensor([True, False, False]))


# docs/spa-testvectors.md#ppo-loss: (logp, old_logp, A, ratio, loss)
DUAL_CLIP_TABLE = [
    (-1.0, -1.0, 1.0, 1.000000, -1.000000),
    (-0.5, -1.0, 1.0, 1.648721, -1.280000),
    (-0.5, -1.0, -1.0, 1.648721, 1.648721),
    (-2.0, -1.0, -1.0, 0.367879, 0.800000),
    (0.5, -1.0, -1.0, 4.481689, 3.000000),
]


def test_dual_clip_losses_match_testcases_7_3() -> None:
    logp, old, adv, ratio, expected = (torch.tensor(col, dtype=torch.float64) for col in zip(*DUAL_CLIP_TABLE))
    assert torch.exp(logp - old).tolist() == pytest.approx(ratio.tolist(), abs=1e-6)
    losses, clip_active, dual_active = dual_clip_token_losses(logp, old, adv)
    assert losses.tolist() == pytest.approx(expected.tolist(), abs=1e-6)
    assert clip_active.tolist() == [False, True, False, True, False]
    assert dual_active.tolist() == [False, False, False, False, True]


def test_policy_loss_is_a_token_mean_over_the_mask() -> None:
    logp, old, adv, _, expected = (torch.tensor([col], dtype=torch.float64) for col in zip(*DUAL_CLIP_TABLE))
    mask = torch.tensor([[True, True, False, True, False]])
    out = policy_loss(logp, old, adv, mask)
    assert out.loss.item() == pytest.approx((-1.0 - 1.28 + 0.8) / 3, abs=1e-6)
    assert out.clipfrac.item() == pytest.approx(2 / 3)
    assert out.clipfrac_lower.item() == 0.0
    assert out.approx_kl.item() == pytest.approx((0.0 - 0.5 + 1.0) / 3)
    assert out.token_losses[0].tolist() == pytest.approx(expected[0].tolist(), abs=1e-6)


def test_policy_loss_gradient_only_reaches_masked_tokens() -> None:
    logp = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False, True, True, False]])
    policy_loss(
        logp, torch.zeros(1, 4, dtype=torch.float64), torch.ones(1, 4, dtype=torch.float64), mask
    ).loss.backward()
    assert logp.grad is not None
    assert logp.grad[0].tolist() == [0.0, -0.5, -0.5, 0.0]


def test_loss_weights_weigh_tokens_or_whole_episodes_within_each_minibatch() -> None:
    # Rows 0-2 are episode 0 (three turn rows: 2 + 1 + 1 trained tokens), row 3 episode 1 (1 token),
    # row 4 episode 2 (2 tokens, alone in the second minibatch of 2 episodes).
    mask = torch.tensor([[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1]], dtype=torch.bool)
    episodes = torch.tensor([0, 0, 0, 1, 2])
    token = loss_weights(mask, episodes, 2, "token-mean")
    assert torch.allclose(token, torch.tensor([[0.2, 0.2, 0], [0, 0.2, 0], [0, 0, 0.2], [0.2, 0, 0], [0, 0.5, 0.5]]))
    episode = loss_weights(mask, episodes, 2, "seq-mean-token-mean")
    # Episode 0's four tokens share its half of the first minibatch; episode 1's one token has the other.
    assert torch.allclose(
        episode, torch.tensor([[0.125, 0.125, 0], [0, 0.125, 0], [0, 0, 0.125], [0.5, 0, 0], [0, 0.5, 0.5]])
    )
    # An episode without trained tokens still counts: the minibatch's weights then sum to less than 1.
    empty = loss_weights(mask & torch.tensor([1, 1, 1, 0, 1]).bool().unsqueeze(-1), episodes, 2, "seq-mean-token-mean")
    assert float(empty[:4].sum()) == pytest.approx(0.5)


def test_entropy_of_uniform_and_peaked_logits() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert entropy_from_logits(logits).tolist() == pytest.approx([math.log(4), 0.0], abs=1e-9)


def test_value_loss_takes_the_larger_error_and_halves_the_token_mean() -> None:
    v = torch.tensor([1.0, 3.0, 3.0], dtype=torch.float64)
    old = torch.tensor([2.0, 2.0, 2.0], dtype=torch.float64)
    ret = torch.tensor([2.0, 0.0, 4.0], dtype=torch.float64)
    mask = torch.tensor([True, True, True])
    # per token: max(1, 0.25)=1; max(9, 6.25)=9; clip(3)=2.5 → max(1, 2.25)=2.25 (clipped wins)
    loss, clipfrac = value_loss(v, old, ret, mask, cliprange_value=0.5)
    assert loss.item() == pytest.approx(0.5 * (1 + 9 + 2.25) / 3)
    assert clipfrac.item() == pytest.approx(1 / 3)
    masked_loss, _ = value_loss(v, old, ret, torch.tensor([True, False, False]))
    assert masked_loss.item() == pytest.approx(0.5)


def _groups(positive: int, total: int = 32) -> list[tuple[str, list[float]]]:
    """`positive` groups with spread (std grows with the index), the rest all-equal scores."""
    groups = []
    for g in range(total):
        if g < positive:
            groups.append((f"g{g}", [0.0] * 7 + [float(g + 1)]))
        else:
            groups.append((f"g{g}", [-0.1] * 8))
    # Interleave so input order differs from std order.
    return groups[::2] + groups[1::2]


def test_group_filter_keeps_the_8_largest_std_of_32() -> None:
    kept = select_groups_by_std(_groups(positive=20), keep_ratio=0.25)
    assert kept == [f"g{g}" for g in range(19, 11, -1)]


def test_std_zero_groups_fill_up_only_when_fewer_than_8_have_spread() -> None:
    groups = _groups(positive=5)
    kept = select_groups_by_std(groups, keep_ratio=0.25)
    spread = [f"g{g}" for g in range(4, -1, -1)]
    assert kept[:5] == spread
    # Ties among std-0 groups: the earliest in input order.
    zero_std_in_input_order = [gid for gid, s in groups if len(set(s)) == 1]
    assert kept[5:] == zero_std_in_input_order[:3]


def test_group_std_is_torch_unbiased() -> None:
    kept = select_groups_by_std([("a", [0.0, 1.0]), ("b", [0.0, 0.0, 0.0, 1.2])], keep_ratio=0.5)
    # unbiased: std([0,1]) = 0.7071 > std([0,0,0,1.2]) = 0.6; the biased std would flip them (0.5 < 0.52).
    assert kept == ["a"]


def test_group_filter_rejects_bad_ratio_and_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="keep_ratio"):
        select_groups_by_std([("a", [1.0, 2.0])], keep_ratio=0.0)
    with pytest.raises(ValueError, match="unique"):
        select_groups_by_std([("a", [1.0]), ("a", [2.0])], keep_ratio=1.0)


def test_low_var_kl_is_k3_zero_where_policies_agree_and_clamped() -> None:
    log_probs = torch.log(torch.tensor([0.5, 0.5, 0.25, 1e-9]))
    ref = torch.log(torch.tensor([0.5, 0.25, 0.5, 0.5]))
    kl = low_var_kl(log_probs, ref)
    # r = ref / p: 1 → 0; 0.5 → 0.5 − ln 0.5 − 1; 2 → 2 − ln 2 − 1; 5e8 → clamped at 10.
    expected = [0.0, 0.5 - math.log(0.5) - 1, 2 - math.log(2) - 1, 10.0]
    assert kl.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    # An unbiased estimate: its mean under p is KL(p ‖ ref) = Σ p ln(p / ref).
    p, q = torch.tensor([0.7, 0.2, 0.1]), torch.tensor([0.4, 0.4, 0.2])
    expected_kl = float((p * (p / q).log()).sum())
    assert float((p * low_var_kl(p.log(), q.log())).sum()) == pytest.approx(expected_kl, rel=1e-5)


def test_grpo_advantages_center_on_the_group_and_divide_by_its_std() -> None:
    scores = torch.tensor([1.0, 3.0, 5.0, -0.1, -0.3, 7.0])
    groups = ["a", "a", "a", "b", "b", "c"]
    # verl compute_grpo_outcome_advantage: (s − mean) / (unbiased std + 1e-6); one member: 0 / 1
    std_a, std_b = 2.0, 0.2 / math.sqrt(2)
    expected = torch.tensor([-2 / std_a, 0.0, 2 / std_a, 0.1 / std_b, -0.1 / std_b, 7.0])
    assert torch.allclose(grpo_advantages(scores, groups), expected, atol=1e-6)
    # Dr. GRPO: centred only; the −0.1 / −0.3 pair stays ±0.1 instead of ±0.71
    centred = grpo_advantages(scores, groups, std_norm=False)
    assert torch.allclose(centred, torch.tensor([-2.0, 0.0, 2.0, 0.1, -0.1, 7.0]), atol=1e-6)
    with pytest.raises(ValueError, match="5 group ids"):
        grpo_advantages(scores, groups[:5])
