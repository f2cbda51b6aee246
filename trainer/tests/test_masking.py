"""Masking (docs/spa-sft.md): the faithful target, the released placeholders, the state-masking ablations."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.masking import (
    IGNORE_INDEX,
    OBS_PLACEHOLDER,
    PRED_PLACEHOLDER,
    Example,
    StateMask,
    add_released_placeholders,
    encode_faithful,
    encode_faithful_rows,
    encode_pairs,
    encode_released,
    faithful_texts,
    prediction_spans,
    prompt_tails,
    released_texts,
    strip_leading_think,
    tokens_in_spans,
)
from spa_trainer.sft.train import make_encoder

from .spa_rows import S1, S2, row, row_dict


def _decode(tok: PreTrainedTokenizerBase, ids: list[int]) -> str:
    text = tok.decode(ids)
    assert isinstance(text, str)  # one sequence in, one string out
    return text


def _trained_text(tok: PreTrainedTokenizerBase, labels: list[int]) -> str:
    return _decode(tok, [t for t in labels if t != IGNORE_INDEX])


def test_faithful_strings_match_testcases_6_3(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    prompt, target = faithful_texts(tiny_tokenizer, row(2))
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n<think>")
    assert prompt.startswith("<|im_start|>system\nYou're a helpful assistant. <|im_end|>\n<|im_start|>user\n")
    expected = (
        f" <observation>{S1}</observation> Push the box up onto the target. "
        f"<prediction>{S2}</prediction></think><answer>Up</answer><|im_end|>"
    )
    assert target == expected


def test_faithful_trains_exactly_the_target(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    ex = encode_faithful(tiny_tokenizer, row(2))
    prompt, target = faithful_texts(tiny_tokenizer, row(2))
    assert len(ex.input_ids) == len(ex.labels)
    assert tiny_tokenizer.decode(ex.input_ids) == prompt + target
    assert _trained_text(tiny_tokenizer, ex.labels) == target
    first = next(i for i, t in enumerate(ex.labels) if t != IGNORE_INDEX)
    assert tiny_tokenizer.decode(ex.input_ids[:first]) == prompt
    assert all(t != IGNORE_INDEX for t in ex.labels[first:])


def _dropped_spans(tok: PreTrainedTokenizerBase, full: Example, masked: Example) -> list[str]:
    """The texts of the runs of tokens that `masked` no longer trains, in order."""
    runs: list[list[int]] = []
    for i, (a, b) in enumerate(zip(full.labels, masked.labels)):
        if a != b:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    return [_decode(tok, [full.input_ids[i] for i in run]) for run in runs]


def test_mask_transitions_drops_both_states(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    ex = encode_faithful(tiny_tokenizer, row(2), mask="transitions")
    trained = _trained_text(tiny_tokenizer, ex.labels)
    # tags, thoughts and answer kept; the current (S1) and next (S2) state contents gone
    assert "<observation></observation> Push the box up onto the target. <prediction></prediction>" in trained
    assert S1 not in trained and "#√####" not in trained
    assert _dropped_spans(tiny_tokenizer, encode_faithful(tiny_tokenizer, row(2)), ex) == [S1, S2]


def test_mask_predictions_drops_only_the_next_state(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    ex = encode_faithful(tiny_tokenizer, row(2), mask="predictions")
    trained = _trained_text(tiny_tokenizer, ex.labels)
    assert "<prediction></prediction>" in trained and S1 in trained
    assert _dropped_spans(tiny_tokenizer, encode_faithful(tiny_tokenizer, row(2)), ex) == [S2]


def test_a_row_flagged_mask_transitions_masks_both_states(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    flagged = SftRow.from_dict({**row_dict(2), "mask_transitions": True})
    plain = make_encoder(SftConfig(), tiny_tokenizer)
    assert plain(flagged) == encode_faithful(tiny_tokenizer, row(2), mask="transitions")
    # the CLI's variants: --mask-transitions (both states) and --mask-predictions (next state only)
    assert make_encoder(SftConfig(mask_transitions=True), tiny_tokenizer)(row(2)) == plain(flagged)
    predictions = make_encoder(SftConfig(mask_predictions=True), tiny_tokenizer)
    assert predictions(row(2)) == encode_faithful(tiny_tokenizer, row(2), mask="predictions")
    assert predictions(flagged) == plain(flagged)  # the row's flag asks for both states


def test_learning_check_masks_a_flagged_row_like_the_trainer(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    from spa_trainer.experiments.learning_check import encode_all

    flagged = SftRow.from_dict({**row_dict(2), "mask_transitions": True})
    [batched] = encode_all(tiny_tokenizer, [flagged], 2048)
    assert batched.example == encode_faithful(tiny_tokenizer, row(2), mask="transitions")


def test_left_truncation_keeps_labels_aligned(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    full = encode_faithful(tiny_tokenizer, row(2))
    cut = encode_faithful(tiny_tokenizer, row(2), max_length=200)
    assert len(cut.input_ids) == 200
    assert cut.input_ids == full.input_ids[-200:] and cut.labels == full.labels[-200:]


def test_released_strings_match_testcases_6_3(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    prompt, response = released_texts(tiny_tokenizer, row(2))
    assert response == (
        "</think><think> <obs_content> Push the box up onto the target. "
        "<pred_content></think><answer>Up</answer><|im_end|>"
    )
    fragments = [
        (
            "Always output: <think> <obs_content> [Your thoughts] <pred_content> </think> <answer> "
            "[your answer] </answer> with no extra text. "
        ),
        (
            "<|im_end|>\n<|im_start|>assistant\n<think></think><think> <obs_content> The box is up-left. "
            "Go Left, then push Up. <pred_content></think><answer>Left || Up</answer><|im_end|>\n"
            "<|im_start|>user\nReward:\n-0.2\n\nTurn 2:\nState:\n######\n#O####\n#X_###\n#P_###\n#___##\n"
            "######\nPlayer (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1).\nYou have 8 "
            "actions left. Always output: <think> <obs_content> [Your thoughts] <pred_content> </think> "
        ),
        "<|im_end|>\n<|im_start|>assistant\n<think>",
    ]
    position = 0
    for fragment in fragments:
        found = prompt.find(fragment, position)
        assert found >= 0, f"missing in released prompt: {fragment[:60]!r}"
        position = found + len(fragment)
    assert prompt.endswith(fragments[-1])
    assert "<observation>" not in prompt and "<prediction>" not in prompt


def test_released_off_by_one_and_vocab(tiny_dir, tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    before = len(tiny_tokenizer)
    add_released_placeholders(tiny_tokenizer, model)
    assert len(tiny_tokenizer) == before + 2
    embeddings = model.get_input_embeddings()
    assert isinstance(embeddings, torch.nn.Embedding)
    assert embeddings.weight.shape[0] == before + 2
    placeholder_ids = tiny_tokenizer.convert_tokens_to_ids([OBS_PLACEHOLDER, PRED_PLACEHOLDER])
    assert isinstance(placeholder_ids, list)  # a list of tokens in, a list of ids out
    obs_id, pred_id = placeholder_ids
    ex = encode_released(tiny_tokenizer, row(2))
    _prompt, response = released_texts(tiny_tokenizer, row(2))
    start = len(ex.input_ids) - len(tiny_tokenizer(response, add_special_tokens=False)["input_ids"])
    assert all(t == IGNORE_INDEX for t in ex.labels[:start])
    for i in range(start, len(ex.input_ids)):
        after_placeholder = ex.input_ids[i - 1] in (obs_id, pred_id)
        assert (ex.labels[i] == IGNORE_INDEX) == after_placeholder, i
    # the placeholders' own labels are trained (the released code's off-by-one)
    trained = [t for t in ex.labels if t != IGNORE_INDEX]
    assert obs_id in trained and pred_id in trained
    assert sum(t == IGNORE_INDEX for t in ex.labels[start:]) == 2


@pytest.mark.parametrize(
    ("response", "expected"),
    [("<think> a</think>", " a</think>"), ("no think", "no think"), (" <think>x", " <think>x")],
)
def test_strip_leading_think(response: str, expected: str) -> None:
    assert strip_leading_think(response) == expected


def test_prediction_spans_are_non_greedy() -> None:
    text = "<prediction>a</prediction> x <prediction>\nb\n</prediction>"
    assert [text[s:e] for s, e in prediction_spans(text)] == ["a", "\nb\n"]


def test_rows_tokenized_together_get_what_each_gets_alone(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    rows = [row(1), row(2), row(1)]
    pairs = [faithful_texts(tiny_tokenizer, r) for r in rows]
    alone = [
        (
            tiny_tokenizer(p, add_special_tokens=False)["input_ids"],
            tiny_tokenizer(t, add_special_tokens=False)["input_ids"],
            [
                tuple(o)
                for o in tiny_tokenizer(t, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
            ],
        )
        for p, t in pairs
    ]
    assert encode_pairs(tiny_tokenizer, pairs) == alone
    masks: list[StateMask] = ["none", "transitions", "predictions"]
    together = encode_faithful_rows(tiny_tokenizer, rows, 300, masks, 5.0)
    assert together == [
        encode_faithful(tiny_tokenizer, r, 300, mask=m, decision_weight=5.0) for r, m in zip(rows, masks)
    ]


def test_tokens_in_spans_is_any_overlap() -> None:
    draw = random.Random(0)
    for _ in range(500):
        offsets = [(a, a + draw.randrange(9)) for a in sorted(draw.randrange(60) for _ in range(draw.randrange(30)))]
        spans = [(s, s + draw.randrange(20)) for s in (draw.randrange(60) for _ in range(draw.randrange(4)))]
        expected = [any(s < b and a < e for s, e in spans) for a, b in offsets]
        assert tokens_in_spans(offsets, spans) == expected


def test_a_window_keeps_the_tokens_of_the_whole_prompt(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    # every window from inside the answer to past the whole prompt: the encoding from a prompt's
    # tail (`prompt_tails`) keeps exactly the tokens the whole prompt's encoding keeps
    rows = [row(1), row(2), row(2)]
    masks: list[StateMask] = ["none"] * 3
    whole = encode_faithful_rows(tiny_tokenizer, rows, 10**6, masks, 5.0)
    for window in [*range(5, 400, 7), 2000]:
        windowed = encode_faithful_rows(tiny_tokenizer, rows, window, masks, 5.0)
        for cut, full in zip(windowed, whole, strict=True):
            assert cut.input_ids == full.input_ids[-window:]
            assert cut.labels == full.labels[-window:]
            assert cut.weights == (full.weights[-window:] if full.weights is not None else None)


def test_a_prompt_tail_starts_at_a_special_token_and_is_only_as_long_as_needed(
    tiny_tokenizer: PreTrainedTokenizerBase,
) -> None:
    prompt, _ = faithful_texts(tiny_tokenizer, row(2))  # two user turns and an assistant turn
    full = tiny_tokenizer(prompt, add_special_tokens=False)["input_ids"]
    [short, enough, all_of_it] = prompt_tails(tiny_tokenizer, [prompt] * 3, [1, len(full) // 2, len(full) + 1])
    assert len(short) < len(enough) < len(all_of_it) == len(full)
    assert len(enough) >= len(full) // 2
    for tail in (short, enough):
        assert tail == full[-len(tail) :]
        assert tiny_tokenizer.convert_ids_to_tokens(tail[0]) in tiny_tokenizer.all_special_tokens


def test_a_tokenizer_that_splits_special_tokens_gets_whole_prompts(tiny_dir: Path) -> None:
    splitting = AutoTokenizer.from_pretrained(tiny_dir, split_special_tokens=True)
    prompt, _ = faithful_texts(splitting, row(2))
    [tail] = prompt_tails(splitting, [prompt], [1])
    assert tail == splitting(prompt, add_special_tokens=False)["input_ids"]
