"""SFT evaluation on held-out rows: validation loss, state perplexity, next-state exact match.

- val loss: the training objective (same encoding as training) averaged over rows.
- state perplexity (paper Table 1 measures PPL of state text): exp of the mean NLL of the
  target tokens inside `<observation>` contents (current-state estimation) and, separately,
  inside `<prediction>` contents (transition modelling), always on the paper-faithful text.
- next-state exact match: given the prompt and the GT response up to and including
  `<prediction>`, greedy-decode until `</prediction>`; a hit when the decoded contents equal
  the ground-truth next state exactly.

Perplexities and exact match see each row through the window the model is trained on
(`window`, sft's `--max-length`): a row longer than the window loses its left part, exactly as
in training, so a small run with a short window is scored on the context it learned from
(docs/spa-sft.md#metrics). With SPA's 2048-token window every row fits and nothing is cut.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .data import SftRow
from .masking import (
    IGNORE_INDEX,
    Example,
    encode_pair,
    faithful_texts,
    observation_spans,
    prediction_spans,
    tokens_in_spans,
)
from .models import generate


@dataclass(frozen=True)
class SftMetrics:
    """Evaluation results; perplexities are NaN when no held-out row had the span."""

    val_loss: float
    observation_ppl: float
    prediction_ppl: float
    next_state_exact_match: float
    exact_match_rows: int
    val_rows: int


def _token_nll(model: PreTrainedModel, ids: list[int]) -> torch.Tensor:
    """NLL of every token given its prefix; entry i is for token i+1."""
    device = next(model.parameters()).device
    inputs = torch.tensor([ids], device=device)
    logits = model(input_ids=inputs).logits[0, :-1].float()
    return F.cross_entropy(logits, inputs[0, 1:], reduction="none")


@torch.no_grad()
def validation_loss(model: PreTrainedModel, examples: Sequence[Example]) -> float:
    """Mean over rows of the per-row mean CE on trained tokens (the training objective)."""
    device = next(model.parameters()).device
    losses = []
    for ex in examples:
        if all(t == IGNORE_INDEX for t in ex.labels):
            continue
        out = model(
            input_ids=torch.tensor([ex.input_ids], device=device), labels=torch.tensor([ex.labels], device=device)
        )
        losses.append(float(out.loss))
    return sum(losses) / len(losses) if losses else math.nan


def _cut(length: int, window: int | None) -> int:
    """Tokens a left-truncating window of `window` tokens drops from a `length`-token sequence."""
    return 0 if window is None else max(0, length - window)


@torch.no_grad()
def state_perplexities(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Sequence[SftRow], window: int | None = None
) -> tuple[float, float]:
    """(observation-span PPL, prediction-span PPL) over the faithful targets of `rows`."""
    sums = {"obs": [0.0, 0], "pred": [0.0, 0]}
    for row in rows:
        prompt, target = faithful_texts(tokenizer, row)
        prompt_ids, target_ids, offsets = encode_pair(tokenizer, prompt, target)
        ids = prompt_ids + target_ids
        cut = _cut(len(ids), window)
        if cut >= len(prompt_ids):  # the window holds part of the response only: skip the row
            continue
        nll = _token_nll(model, ids[cut:])[len(prompt_ids) - cut - 1 :]
        for key, spans in (("obs", observation_spans(target)), ("pred", prediction_spans(target))):
            inside = torch.tensor(tokens_in_spans(offsets, spans), device=nll.device)
            sums[key][0] += float(nll[inside].sum())
            sums[key][1] += int(inside.sum())
    obs_ppl, pred_ppl = (math.exp(s / n) if n else math.nan for s, n in (sums["obs"], sums["pred"]))
    return obs_ppl, pred_ppl


@torch.no_grad()
def next_state_exact_match(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    limit: int = 32,
    window: int | None = None,
) -> tuple[float, int]:
    """(hit rate, rows evaluated) of greedy next-state decoding on rows with a prediction."""
    device = next(model.parameters()).device
    hits = evaluated = 0
    for row in rows:
        prompt, target = faithful_texts(tokenizer, row)
        spans = prediction_spans(target)
        if not spans or evaluated >= limit:
            continue
        start, end = spans[0]
        truth = target[start:end]
        prefix_ids = tokenizer(prompt + target[:start], add_special_tokens=False)["input_ids"]
        prompt_ids, target_ids, _ = encode_pair(tokenizer, prompt, target)
        cut = _cut(len(prompt_ids) + len(target_ids), window)
        if cut >= len(prefix_ids):  # the window starts inside the prediction: nothing to score
            continue
        prefix_ids = prefix_ids[cut:]
        budget = len(tokenizer(truth, add_special_tokens=False)["input_ids"]) + 8
        out = generate(
            model,
            torch.tensor([prefix_ids], device=device),
            attention_mask=torch.ones(1, len(prefix_ids), dtype=torch.long, device=device),
            max_new_tokens=budget,
            do_sample=False,
            stop_strings=["</prediction>"],
            tokenizer=tokenizer,
            pad_token_id=tokenizer.pad_token_id,
        )
        text = str(tokenizer.decode(out[0, len(prefix_ids) :], skip_special_tokens=False))
        hits += int(text.split("</prediction>")[0] == truth and "</prediction>" in text)
        evaluated += 1
    return (hits / evaluated if evaluated else math.nan), evaluated


def evaluate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    encode: Callable[[SftRow], Example],
    exact_match_limit: int = 32,
    window: int | None = None,
) -> SftMetrics:
    """All held-out metrics, each row seen through the training `window`; the model is put in eval mode and left there."""
    model.eval()
    loss = validation_loss(model, [encode(r) for r in rows])
    obs_ppl, pred_ppl = state_perplexities(model, tokenizer, rows, window)
    em, n = next_state_exact_match(model, tokenizer, rows, exact_match_limit, window)
    return SftMetrics(loss, obs_ppl, pred_ppl, em, n, len(rows))
