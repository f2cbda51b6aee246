"""Held-out metrics beyond the loss (docs/spa-sft.md#metrics): observation copy under greedy
generation (first vs later turns) and the board-dependence probe of the demonstrated action."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.models.tiny import TINY_MODELS, tiny_model_dir
from spa_trainer.sft.masking import encode_faithful, faithful_texts, observation_spans
from spa_trainer.sft.metrics import (
    ACTION_WORDS,
    action_choice_tokens,
    action_distributions,
    action_probe,
    board_dependence,
    evaluate,
    greedy_continuations,
    is_first_turn,
    observation_copy,
    state_decodings,
    thought_action,
)

from .spa_rows import S0, S1, row, row_dict
from .synthetic import sokoban_rows


def _with_response(raw: dict[str, object], response: str, **fields: object) -> SftRow:
    return SftRow.from_dict({**raw, "response": response, **fields})


# --- observation copy -----------------------------------------------------------------------------


class _Writes:
    """Stands in for `model.generate`: records each row's prefix (its left pads dropped) and writes
    the next of `texts` after it, the rows' new tokens right-padded as generate pads finished rows."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, texts: list[str]) -> None:
        self.tokenizer, self.texts = tokenizer, list(texts)
        self.prefixes: list[list[int]] = []

    def __call__(
        self, input_ids: torch.Tensor, *, attention_mask: torch.Tensor, pad_token_id: int, **_kwargs: object
    ) -> torch.Tensor:
        news: list[list[int]] = []
        for ids, mask in zip(input_ids, attention_mask, strict=True):
            self.prefixes.append(ids[mask.bool()].tolist())
            news.append(self.tokenizer(self.texts.pop(0), add_special_tokens=False)["input_ids"])
        width = max(len(new) for new in news)
        padded = torch.tensor([new + [pad_token_id] * (width - len(new)) for new in news])
        return torch.cat([input_ids, padded], dim=1)


def test_observation_copy_hits_misses_and_turns(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_mode = _with_response(row_dict(1), "<think>Shortest plan: Left, Up.</think><answer>Left</answer>")
    rows = [row(1), base_mode, row(2), row(1)]  # the base-mode row has no observation: skipped
    assert [is_first_turn(r) for r in rows] == [True, True, False, True]
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    # row 1 copied exactly; row 2 one cell wrong; the second row 1 never closes the tag
    writes = _Writes(tiny_tokenizer, [S0 + "</observation>", S1.replace("#P_", "#_P") + "</observation>", S0])
    monkeypatch.setattr(model, "generate", writes)
    copy = observation_copy(model, tiny_tokenizer, rows)
    assert (copy.rate, copy.rows) == (pytest.approx(1 / 3), 3)
    assert (copy.first_turn_rate, copy.first_turn_rows) == (0.5, 2)
    assert (copy.later_turn_rate, copy.later_turn_rows) == (0.0, 1)
    # the prefix is the prompt and the target up to and including <observation>
    prompt, target = faithful_texts(tiny_tokenizer, row(2))
    start = observation_spans(target)[0][0]
    assert tiny_tokenizer.decode(writes.prefixes[1]) == prompt + target[:start]
    assert target[:start].endswith("<observation>")


def test_observation_copy_keeps_to_the_limit_and_the_window(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    writes = _Writes(tiny_tokenizer, [S0 + "</observation>"] * 3)
    monkeypatch.setattr(model, "generate", writes)
    full = encode_faithful(tiny_tokenizer, row(1), max_length=100_000).input_ids
    window = len(full) - 40
    copy = observation_copy(model, tiny_tokenizer, [row(1), row(1), row(2)], limit=1, window=window)
    assert (copy.rate, copy.rows, copy.later_turn_rows) == (1.0, 1, 0)
    [prefix] = writes.prefixes
    assert prefix == full[40 : len(prefix) + 40]  # the training window's left cut
    empty = observation_copy(model, tiny_tokenizer, [])
    assert empty.rows == 0 and math.isnan(empty.rate) and math.isnan(empty.first_turn_rate)


def test_rows_decoded_together_decode_as_each_alone(tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    # prefixes of different lengths, so the batch left-pads all but the longest
    rows = [row(1), row(2)]
    # a random model with sharp logits, so its greedy tokens vary with the prefix (a right-padded
    # batch decodes other tokens than each row alone)
    config = AutoConfig.from_pretrained(tiny_dir)
    config.initializer_range = 0.5
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config).eval()
    tasks = state_decodings(tiny_tokenizer, rows, observation_spans, limit=8, window=None)
    assert len({len(t.prefix_ids) for t in tasks}) > 1
    together = greedy_continuations(model, tiny_tokenizer, tasks, "</observation>")
    alone = [greedy_continuations(model, tiny_tokenizer, [t], "</observation>")[0] for t in tasks]
    assert together == alone


# --- board-dependence probe -----------------------------------------------------------------------


def test_thought_action_is_the_first_action_word_of_the_thought() -> None:
    wm = "<think> <observation>G\nPlayer (P) is at (1,2).</observation> Action: Up. <prediction>G</prediction>"
    assert thought_action(wm + "</think><answer>Up</answer>") == (wm.index("Up."), "Up")
    two_moves = " <observation>x</observation> The box is up-left. Go Left, then push Up. <prediction>y"
    assert thought_action(two_moves) == (two_moves.index("Left"), "Left")
    assert thought_action("Shortest plan: Right, Down.</think><answer>Right || Down</answer>") == (15, "Right")
    # no action in the thought: the answer does not count
    assert (
        thought_action(" <observation>x</observation> Push. <prediction>y</prediction></think><answer>Up</answer>")
        is None
    )
    assert thought_action("I am not sure.</think><answer>Up</answer>") is None
    assert thought_action(" <observation>Upward") is None  # unterminated observation
    assert thought_action("Uphill and Leftover, then Down") == (len("Uphill and Leftover, then "), "Down")


@pytest.mark.parametrize("name", ["tiny", "tiny-cells"])
def test_the_four_action_words_start_with_distinct_tokens(name: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir(TINY_MODELS[name]))
    for head, lead in ((" <observation>x</observation> Action: ", "Ġ"), ("Shortest plan: ", "Ġ"), ("Go (", "")):
        choice = action_choice_tokens(tokenizer, head)
        assert choice is not None, head
        ids, firsts = choice
        assert tokenizer.convert_ids_to_tokens(firsts) == [lead + w for w in ACTION_WORDS]
        assert ids == tokenizer(head + "Up", add_special_tokens=False)["input_ids"][: len(ids)]


def _probe_rows(count: int) -> list[SftRow]:
    """Sokoban first turns whose thought names an action (world-model and base-mode), plus rows the
    probe skips: a Sudoku row and one whose thought names no action."""
    rows = []
    for i, raw in enumerate(sokoban_rows(count)):
        action = ACTION_WORDS[i % 4]
        if i % 2:
            response = f"<think>Shortest plan: {action}, Up.</think><answer>{action} || Up</answer>"
        else:
            response = str(raw["response"]).replace("The wall blocks me.", f"Action: {action}.")
        rows.append(_with_response(raw, response))
    raw = sokoban_rows(1)[0]
    rows.append(_with_response(raw, str(raw["response"]).replace("The wall blocks me.", "Action: Up."), env="sudoku"))
    rows.append(_with_response(raw, str(raw["response"])))  # "The wall blocks me.": no action named
    return rows


class _ActionLM(torch.nn.Module):
    """A stand-in LM that strongly prefers one action word at the last position: the one `choose`
    picks from the input ids (None: the same logits everywhere). Records its choices."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, choose: Callable[[torch.Tensor], int] | None = None) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1), requires_grad=False)
        self.vocab = len(tokenizer)
        self.tokens = [tokenizer.encode(" " + w, add_special_tokens=False)[0] for w in ACTION_WORDS]
        self.choose = choose
        self.choices: list[int] = []

    def forward(self, input_ids: torch.Tensor, **_kwargs: object) -> object:
        logits = torch.zeros(input_ids.shape[0], input_ids.shape[1], self.vocab)
        logits[..., self.tokens[0]] = 1.0  # the same preference everywhere unless `choose`
        if self.choose is not None:
            pick = self.choose(input_ids[0])
            self.choices.append(pick)
            logits[..., self.tokens[pick]] = 30.0
        return type("Out", (), {"logits": logits})()


def _entropy(counts: Counter[int]) -> float:
    n = sum(counts.values())
    return -sum(c / n * math.log(c / n) for c in counts.values())


def test_a_board_blind_model_has_zero_mutual_information(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    rows = _probe_rows(8)
    model = cast(PreTrainedModel, _ActionLM(tiny_tokenizer))
    probs, demonstrated = action_distributions(model, tiny_tokenizer, rows)
    assert probs.shape == (8, 4) and demonstrated == [i % 4 for i in range(8)]  # Sudoku and no-action rows skipped
    result = action_probe(model, tiny_tokenizer, rows)
    assert result.rows == 8
    assert result.mutual_information == pytest.approx(0.0, abs=1e-9)
    e = math.e
    assert result.demonstrated_prob == pytest.approx((2 * e / (e + 3) + 6 / (e + 3)) / 8)


def test_a_board_reading_model_has_positive_mutual_information(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    rows = _probe_rows(8)
    model = _ActionLM(tiny_tokenizer, choose=lambda ids: int(ids.sum()) % 4)  # a function of prompt and board
    result = action_probe(cast(PreTrainedModel, model), tiny_tokenizer, rows)
    counts = Counter(model.choices)
    assert result.rows == 8 and len(counts) >= 2
    assert result.mutual_information == pytest.approx(_entropy(counts), abs=1e-6) and result.mutual_information > 0.1
    agree = sum(c == i % 4 for i, c in enumerate(model.choices))
    assert result.demonstrated_prob == pytest.approx(agree / 8, abs=1e-6)
    # the demonstrated action itself as the model's choice: all probability on it
    perfect = board_dependence(torch.eye(4)[[0, 1, 2, 3, 0]], [0, 1, 2, 3, 0])
    assert perfect.mutual_information == pytest.approx(_entropy(Counter([0, 1, 2, 3, 0])))
    assert perfect.demonstrated_prob == 1.0
    uniform = board_dependence(torch.full((3, 4), 0.25), [0, 1, 2])
    assert (uniform.mutual_information, uniform.demonstrated_prob) == (0.0, 0.25)
    nothing = board_dependence(torch.empty(0, 4), [])
    assert nothing.rows == 0 and math.isnan(nothing.mutual_information) and math.isnan(nothing.demonstrated_prob)


def test_probe_and_copy_on_the_tiny_model(tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    rows = _probe_rows(6)
    probe = action_probe(model, tiny_tokenizer, rows, window=300)
    assert probe.rows == 6
    assert 0.0 <= probe.mutual_information <= math.log(4)
    assert 0.0 < probe.demonstrated_prob < 1.0
    metrics = evaluate(model, tiny_tokenizer, rows, lambda r: encode_faithful(tiny_tokenizer, r), 2, window=300)
    assert metrics.action_probe_rows == 6 and metrics.action_board_mi == pytest.approx(probe.mutual_information)
    assert metrics.observation_copy_rows == metrics.observation_copy_first_turn_rows == 2
    assert metrics.observation_copy_exact_match == 0.0  # random weights copy nothing
    assert metrics.observation_copy_later_turn_rows == 0 and math.isnan(metrics.observation_copy_later_turn_exact_match)
