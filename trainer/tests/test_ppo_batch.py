"""Rollout records → one left-padded sequence per episode with masks and scores (docs/spa-ppo.md#sequence)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import PreTrainedTokenizerBase

from spa_trainer.ppo.batch import build_batch, filter_groups, staleness_histogram, total_score
from spa_trainer.ppo.functional import MaskMode

from .ppo_rollouts import USER_2, rollout

ONE_TURN = rollout("a", "g1", ["Right"], [10.9], success=True)
TWO_TURNS = rollout("b", "g1", ["Left", "Right"], [-0.1, 10.9], penalty=-0.1, success=True)


def _trained_text(tok: PreTrainedTokenizerBase, batch_row: int, mode: MaskMode) -> str:
    batch = build_batch([ONE_TURN, TWO_TURNS], tok, mode)
    responses = batch.input_ids[batch_row, 1:]
    return str(tok.decode(responses[batch.response_mask[batch_row]]))


def test_whole_conversation_is_one_left_padded_sequence(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    batch = build_batch([ONE_TURN, TWO_TURNS], tiny_tokenizer, "response-only")
    short, long = batch.attention_mask.sum(dim=1).tolist()
    assert long == batch.input_ids.shape[1] and short < long
    pad = batch.input_ids.shape[1] - short
    assert batch.attention_mask[0, :pad].sum() == 0 and batch.attention_mask[0, pad:].all()
    assert batch.position_ids[0, pad:].tolist() == list(range(short))
    text = str(tiny_tokenizer.decode(batch.input_ids[1]))
    assert text.startswith("<|im_start|>system\nYou're a helpful assistant. <|im_end|>\n")
    assert text.endswith("<answer>Right</answer><|im_end|>\n")
    assert USER_2 in text


def test_response_only_mask_trains_assistant_turns_only(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    trained = _trained_text(tiny_tokenizer, 1, "response-only")
    turn = "assistant\n<think>go</think><answer>{}</answer><|im_end|>\n"
    # Mask entry j follows token j's turn, so the "\n" closing assistant turn 1 trains the
    # prediction of the next (user) <|im_start|> — RAGEN's alignment, docs/spa-testvectors.md#ppo-masks.
    assert trained == turn.format("Left") + "<|im_start|>" + turn.format("Right")


def test_generated_mask_trains_only_what_the_policy_sampled(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    # Not the role header, not the <think> the generation prompt supplies, not the template's
    # newline after <|im_end|>: the continuation and the end-of-turn token that stopped it.
    trained = _trained_text(tiny_tokenizer, 1, "generated")
    assert trained == "go</think><answer>Left</answer><|im_end|>go</think><answer>Right</answer><|im_end|>"


def test_generated_mask_needs_prompts_that_prefix_the_conversation(
    tiny_tokenizer: PreTrainedTokenizerBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    render = tiny_tokenizer.apply_chat_template

    def rewriting(conversation: list[dict[str, str]], **kwargs: Any) -> object:
        """A template that renders a generation prompt the conversation does not start with."""
        text = render(conversation, **kwargs)
        return f"{text}<|im_start|>" if kwargs.get("add_generation_prompt") else text

    monkeypatch.setattr(tiny_tokenizer, "apply_chat_template", rewriting)
    with pytest.raises(ValueError, match="use --mask response-only"):
        build_batch([TWO_TURNS], tiny_tokenizer, "generated")


def test_all_after_system_mask_also_trains_user_tokens(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    trained = _trained_text(tiny_tokenizer, 1, "all-after-system")
    full = str(tiny_tokenizer.apply_chat_template(TWO_TURNS["messages"], add_generation_prompt=False, tokenize=False))
    system_end = full.index("<|im_start|>user")
    # Everything after the system message's own <|im_start|>user token (whose prediction is
    # judged by the system turn) is trained.
    assert trained == full[system_end + len("<|im_start|>") :]
    assert USER_2 in trained


def test_score_is_sum_of_turn_rewards_plus_penalty_on_the_last_token(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    batch = build_batch([ONE_TURN, TWO_TURNS], tiny_tokenizer, "response-only")
    assert batch.scores.tolist() == pytest.approx([10.9, 10.7])
    assert batch.token_rewards[:, -1].tolist() == pytest.approx([10.9, 10.7])
    assert batch.token_rewards[:, :-1].abs().sum().item() == 0.0


def test_select_trims_shared_left_padding_consistently(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    batch = build_batch([TWO_TURNS, ONE_TURN], tiny_tokenizer, "response-only")
    batch = batch.with_extras(
        marker=torch.arange(batch.response_mask.numel(), dtype=torch.float32).view_as(batch.response_mask)
    )
    part = batch.select(torch.tensor([1]))
    assert part.attention_mask.all()
    width = part.input_ids.shape[1]
    assert torch.equal(part.input_ids[0], batch.input_ids[1, -width:])
    assert torch.equal(part.response_mask[0], batch.response_mask[1, -(width - 1) :])
    assert torch.equal(part.extras["marker"][0], batch.extras["marker"][1, -(width - 1) :])


def test_rollout_must_end_with_an_assistant_message(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    bad = dict(ONE_TURN, messages=ONE_TURN["messages"] + [{"role": "user", "content": "Reward:\n10.9\n"}])
    with pytest.raises(ValueError, match="'a' ends with user"):
        build_batch([bad], tiny_tokenizer, "response-only")


def test_score_field_must_agree_with_rewards_and_penalty() -> None:
    assert total_score(TWO_TURNS) == pytest.approx(10.7)
    with pytest.raises(ValueError, match="score 3.0"):
        total_score(dict(TWO_TURNS, score=3.0))


def test_staleness_histogram_counts_version_lag() -> None:
    records = [dict(ONE_TURN, policy_version=v) for v in (7, 7, 5, 4, 7)]
    assert staleness_histogram(records, trainer_version=7) == {0: 3, 2: 1, 3: 1}


def test_filter_groups_keeps_whole_groups_with_spread() -> None:
    flat = [rollout(f"f{i}", "flat", ["Up"], [-0.1]) for i in range(3)]
    spread = [rollout(f"s{i}", "spread", ["Up"], [r]) for i, r in enumerate([-0.1, 10.9, -0.5])]
    kept = filter_groups(flat + spread, keep_ratio=0.5)
    assert [r["trajectory_id"] for r in kept] == ["s0", "s1", "s2"]
