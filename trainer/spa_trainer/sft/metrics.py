"""SFT evaluation on held-out rows: validation loss, state perplexity, next-state exact match,
observation copy under generation, and how much the demonstrated action depends on the board.

- val loss: the training objective (same encoding as training, with its decision weights when
  `--decision-weight` is set) averaged over rows.
- state perplexity (paper Table 1 measures PPL of state text): exp of the mean NLL of the
  target tokens inside `<observation>` contents (current-state estimation) and, separately,
  inside `<prediction>` contents (transition modelling), always on the paper-faithful text.
- next-state exact match: given the prompt and the GT response up to and including
  `<prediction>`, greedy-decode until `</prediction>`; a hit when the decoded contents equal
  the ground-truth next state exactly.
- observation copy: the same with `<observation>`: given the prompt and the GT response up to and
  including `<observation>`, greedy-decode until `</observation>`; a hit when the decoded contents
  equal the GT current state. Teacher forcing (the observation PPL) hides a model that copies the
  board token by token only while fed the true previous token; overall and for first turns (the
  prompt holds no assistant message: the board is in the user turn only) vs later turns.
- board-dependence probe: on rows whose thought names an action (`thought_action`), the
  GT response is teacher-forced up to just before that word, and the model's next-token
  probabilities of the four action words (their first tokens in that exact context) renormalised
  over the four. Mutual information between action and board I = H(mean p) - mean H(p) in nats
  (0: the same distribution on every board; ln 4 the most), and the mean probability of the
  demonstrated action (0.25: uniform).

Perplexities and exact match see each row through the window the model is trained on
(`window`, sft's `--max-length`): a row longer than the window loses its left part, exactly as
in training, so a small run with a short window is scored on the context it learned from
(docs/spa-sft.md#metrics). With SPA's 2048-token window every row fits and nothing is cut.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..data.sft_rows import SftRow
from ..models.load import generate, pad_token_id
from ..progress import PROGRESS_EVERY_S, PhaseProgress
from .masking import (
    IGNORE_INDEX,
    Example,
    encode_pair,
    faithful_texts,
    observation_spans,
    prediction_spans,
    tokens_in_spans,
    weighted_token_mean,
)

ACTION_WORDS = ("Up", "Down", "Left", "Right")
"""The action vocabulary of Sokoban and FrozenLake (the same four words), probed by `action_probe`."""
PROBE_ENVS = frozenset({"sokoban", "frozenlake"})
_ACTION_WORD = re.compile(r"\b(" + "|".join(ACTION_WORDS) + r")\b")
_THOUGHT_END = re.compile(r"<prediction>|</think>|<answer>")


@dataclass(frozen=True)
class SftMetrics:
    """Evaluation results; a rate, perplexity or probe value is NaN when no held-out row had data
    for it (null in metrics.json)."""

    val_loss: float
    observation_ppl: float
    prediction_ppl: float
    next_state_exact_match: float
    exact_match_rows: int
    val_rows: int
    observation_copy_exact_match: float = math.nan
    observation_copy_rows: int = 0
    observation_copy_first_turn_exact_match: float = math.nan
    observation_copy_first_turn_rows: int = 0
    observation_copy_later_turn_exact_match: float = math.nan
    observation_copy_later_turn_rows: int = 0
    action_board_mi: float = math.nan  # nats
    action_demonstrated_prob: float = math.nan
    action_probe_rows: int = 0


def _token_nll(model: PreTrainedModel, ids: list[int]) -> torch.Tensor:
    """NLL of every token given its prefix; entry i is for token i+1."""
    device = next(model.parameters()).device
    inputs = torch.tensor([ids], device=device)
    logits = model(input_ids=inputs).logits[0, :-1].float()
    return F.cross_entropy(logits, inputs[0, 1:], reduction="none")


@torch.no_grad()
def validation_loss(model: PreTrainedModel, examples: Iterable[Example]) -> float:
    """Mean over rows of the per-row mean CE on trained tokens (the training objective); a row
    with weights (`--decision-weight`) counts with its weighted mean Σ w·CE / Σ w, as in training."""
    device = next(model.parameters()).device
    losses = []
    for ex in examples:
        if all(t == IGNORE_INDEX for t in ex.labels):
            continue
        if ex.weights is None:
            out = model(
                input_ids=torch.tensor([ex.input_ids], device=device), labels=torch.tensor([ex.labels], device=device)
            )
            losses.append(float(out.loss))
            continue
        labels = torch.tensor(ex.labels[1:], device=device)
        logits = model(input_ids=torch.tensor([ex.input_ids], device=device)).logits[0, :-1].float()
        nll = F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, reduction="none")
        losses.append(float(weighted_token_mean(nll, labels, torch.tensor(ex.weights[1:], device=device))))
    return sum(losses) / len(losses) if losses else math.nan


def _cut(length: int, window: int | None) -> int:
    """Tokens a left-truncating window of `window` tokens drops from a `length`-token sequence."""
    return 0 if window is None else max(0, length - window)


@torch.no_grad()
def state_perplexities(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Iterable[SftRow], window: int | None = None
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


def is_first_turn(row: SftRow) -> bool:
    """Is `row` its trajectory's first assistant turn? Its prompt holds no assistant message. (The
    TS SftRow's `turn` is 0-based, but a row without the field, e.g. SPA's released data, reads as
    turn 0, so the prompt decides.)"""
    return all(m.role != "assistant" for m in row.prompt)


@dataclass(frozen=True)
class StateDecoding:
    """One row's greedy-decoding task: its prefix (as the window shows it), the state it should
    decode, and its token budget."""

    row: SftRow
    prefix_ids: list[int]
    truth: str
    budget: int


def state_decodings(
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    spans_of: Callable[[str], list[tuple[int, int]]],
    limit: int,
    window: int | None,
) -> list[StateDecoding]:
    """The first `limit` rows whose target has a span of `spans_of` and whose window does not
    start inside it, each as its decoding task."""
    tasks: list[StateDecoding] = []
    for row in rows:
        if len(tasks) >= limit:
            break
        prompt, target = faithful_texts(tokenizer, row)
        spans = spans_of(target)
        if not spans:
            continue
        start, end = spans[0]
        truth = target[start:end]
        prefix_ids = tokenizer(prompt + target[:start], add_special_tokens=False)["input_ids"]
        prompt_ids, target_ids, _ = encode_pair(tokenizer, prompt, target)
        cut = _cut(len(prompt_ids) + len(target_ids), window)
        if cut >= len(prefix_ids):  # the window starts inside the state: nothing to score
            continue
        budget = len(tokenizer(truth, add_special_tokens=False)["input_ids"]) + 8
        tasks.append(StateDecoding(row, prefix_ids[cut:], truth, budget))
    return tasks


def greedy_continuations(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    tasks: Sequence[StateDecoding],
    close: str,
) -> list[str]:
    """Each task's greedy continuation, at most its budget of tokens and ending at `close`: the
    tasks decode together, left-padded (positions follow the attention mask, so each row's tokens
    are the ones it decodes alone; tests/test_sft_probes.py), and a row that reached `close` pads
    while the others go on (the warm-up's 96 rows: 1.1 s, against 12 s one row at a time)."""
    if not tasks:
        return []
    device = next(model.parameters()).device
    width = max(len(t.prefix_ids) for t in tasks)
    pad = pad_token_id(tokenizer)
    ids = torch.tensor([[pad] * (width - len(t.prefix_ids)) + t.prefix_ids for t in tasks], device=device)
    mask = torch.tensor([[0] * (width - len(t.prefix_ids)) + [1] * len(t.prefix_ids) for t in tasks], device=device)
    out = generate(
        model,
        ids,
        attention_mask=mask,
        max_new_tokens=max(t.budget for t in tasks),
        do_sample=False,
        stop_strings=[close],
        tokenizer=tokenizer,
        pad_token_id=pad,
    )
    return [
        str(tokenizer.decode(out[i, width : width + t.budget], skip_special_tokens=False)) for i, t in enumerate(tasks)
    ]


@torch.no_grad()
def greedy_state_hits(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    spans_of: Callable[[str], list[tuple[int, int]]],
    close: str,
    limit: int = 32,
    window: int | None = None,
    progress: PhaseProgress | None = None,
    batch: int = 32,
) -> list[tuple[SftRow, bool]]:
    """(row, hit) for the first `limit` rows whose target has a span of `spans_of`: greedy
    decoding from the prompt and the target up to the span's opening tag until `close`; a hit
    when the decoded text before `close` equals the span's contents. The prefix is seen through
    the training window; a row whose window starts inside the span is skipped. Rows decode
    `batch` at a time; `progress` counts the rows decoded."""
    tasks = state_decodings(tokenizer, rows, spans_of, limit, window)
    results: list[tuple[SftRow, bool]] = []
    for at in range(0, len(tasks), batch):
        part = tasks[at : at + batch]
        for task, text in zip(part, greedy_continuations(model, tokenizer, part, close), strict=True):
            results.append((task.row, text.split(close)[0] == task.truth and close in text))
        if progress is not None:
            progress.count(len(results))
    return results


def _rate(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else math.nan


@torch.no_grad()
def next_state_exact_match(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    limit: int = 32,
    window: int | None = None,
    progress: PhaseProgress | None = None,
) -> tuple[float, int]:
    """(hit rate, rows evaluated) of greedy next-state decoding on rows with a prediction."""
    results = greedy_state_hits(model, tokenizer, rows, prediction_spans, "</prediction>", limit, window, progress)
    hits = [hit for _, hit in results]
    return _rate(hits), len(hits)


@dataclass(frozen=True)
class ObservationCopy:
    """Greedy observation-copy exact match: overall, first turns and later turns (rate, rows)."""

    rate: float
    rows: int
    first_turn_rate: float
    first_turn_rows: int
    later_turn_rate: float
    later_turn_rows: int


@torch.no_grad()
def observation_copy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    limit: int = 32,
    window: int | None = None,
    progress: PhaseProgress | None = None,
) -> ObservationCopy:
    """Greedy current-state decoding on the first `limit` rows with an observation: given the
    prompt and the target up to and including `<observation>`, until `</observation>`."""
    results = greedy_state_hits(model, tokenizer, rows, observation_spans, "</observation>", limit, window, progress)
    first = [hit for row, hit in results if is_first_turn(row)]
    later = [hit for row, hit in results if not is_first_turn(row)]
    hits = [hit for _, hit in results]
    return ObservationCopy(_rate(hits), len(hits), _rate(first), len(first), _rate(later), len(later))


def row_env(row: SftRow) -> str:
    """The row's environment: the TS SftRow's `env` field, else `data_source`."""
    return str(row.extra.get("env") or row.data_source).lower()


def thought_action(target: str) -> tuple[int, str] | None:
    """(character position, word) of the first action word of the target's thought: after
    `</observation>` in a world-model response, from the start in a base-mode one, and before
    `<prediction>`, `</think>` or `<answer>`; None when the thought names none."""
    close = target.find("</observation>")
    if close >= 0:
        start = close + len("</observation>")
    elif "<observation>" in target:
        return None
    else:
        start = 0
    end = _THOUGHT_END.search(target, start)
    found = _ACTION_WORD.search(target, start, end.start() if end else len(target))
    return (found.start(), found.group(1)) if found else None


def action_choice_tokens(tokenizer: PreTrainedTokenizerBase, head: str) -> tuple[list[int], list[int]] | None:
    """(ids of `head`, first token of each action word after `head`): the tokens of `head + word`
    the four words share, then each word's own first token. None when the four first tokens are
    not distinct (the tokenizer merges the words' start with `head`)."""
    encoded = [list(tokenizer(head + word, add_special_tokens=False)["input_ids"]) for word in ACTION_WORDS]
    shared = 0
    while all(len(e) > shared for e in encoded) and len({e[shared] for e in encoded}) == 1:
        shared += 1
    if any(len(e) <= shared for e in encoded):
        return None
    firsts = [e[shared] for e in encoded]
    return (encoded[0][:shared], firsts) if len(set(firsts)) == len(firsts) else None


@dataclass(frozen=True)
class ActionProbe:
    """Board dependence of the demonstrated action: mutual information (nats) between action and
    board, the mean probability of the demonstrated action, and the rows probed."""

    mutual_information: float
    demonstrated_prob: float
    rows: int


@torch.no_grad()
def action_distributions(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Iterable[SftRow], window: int | None = None
) -> tuple[torch.Tensor, list[int]]:
    """(rows × 4 probabilities over ACTION_WORDS, index of each row's demonstrated word) for the
    Sokoban/FrozenLake rows whose thought names an action, teacher-forced through the training window."""
    device = next(model.parameters()).device
    probs: list[torch.Tensor] = []
    demonstrated: list[int] = []
    for row in rows:
        if row_env(row) not in PROBE_ENVS:
            continue
        prompt, target = faithful_texts(tokenizer, row)
        found = thought_action(target)
        if found is None:
            continue
        at, word = found
        choice = action_choice_tokens(tokenizer, target[:at])
        if choice is None:
            continue
        head, firsts = choice
        prompt_ids, target_ids, _ = encode_pair(tokenizer, prompt, target)
        k = len(head)
        truth = ACTION_WORDS.index(word)
        if target_ids[:k] != head or len(target_ids) <= k or target_ids[k] != firsts[truth]:
            continue  # the target tokenises differently in full: not the context training sees
        ids = prompt_ids + target_ids[:k]
        cut = _cut(len(prompt_ids) + len(target_ids), window)
        if cut >= len(ids):  # the window starts after the word: nothing to read
            continue
        logits = model(input_ids=torch.tensor([ids[cut:]], device=device)).logits[0, -1].float()
        probs.append(torch.softmax(logits[firsts], dim=-1).cpu())  # renormalised over the four words
        demonstrated.append(truth)
    return (torch.stack(probs) if probs else torch.empty(0, len(ACTION_WORDS))), demonstrated


def board_dependence(probs: torch.Tensor, demonstrated: Sequence[int]) -> ActionProbe:
    """I = H(mean p) - mean H(p) over the rows' action distributions, and mean p(demonstrated)."""
    if len(demonstrated) == 0:
        return ActionProbe(math.nan, math.nan, 0)
    marginal = torch.special.entr(probs.double().mean(dim=0)).sum()
    conditional = torch.special.entr(probs.double()).sum(dim=1).mean()
    picked = probs[torch.arange(len(demonstrated)), torch.tensor(list(demonstrated))]
    return ActionProbe(max(0.0, float(marginal - conditional)), float(picked.double().mean()), len(demonstrated))


@torch.no_grad()
def action_probe(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Iterable[SftRow], window: int | None = None
) -> ActionProbe:
    """The board-dependence probe over `rows` (see the module docstring)."""
    return board_dependence(*action_distributions(model, tokenizer, rows, window))


def evaluate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    encode: Callable[[SftRow], Example],
    exact_match_limit: int = 32,
    window: int | None = None,
    label: str = "sft",
    every: float = PROGRESS_EVERY_S,
) -> SftMetrics:
    """All held-out metrics, each row seen through the training `window`; the model is put in eval
    mode and left there. Generation (exact match, observation copy) runs on at most
    `exact_match_limit` rows each; the teacher-forced probe on every row. Each part prints its
    progress as `[label] held-out metrics (part): n/total rows, …` at least every `every` seconds."""
    model.eval()
    print(f"[{label}] held-out metrics on {len(rows)} rows (greedy decoding on up to {exact_match_limit})", flush=True)

    def part(name: str, total: int) -> PhaseProgress:
        return PhaseProgress(label, f"held-out metrics ({name})", total, every=every)

    loss = validation_loss(model, (encode(r) for r in part("val loss", len(rows)).over(rows)))
    obs_ppl, pred_ppl = state_perplexities(model, tokenizer, part("state perplexity", len(rows)).over(rows), window)
    decoded = min(exact_match_limit, len(rows))
    em, n = next_state_exact_match(model, tokenizer, rows, exact_match_limit, window, part("exact match", decoded))
    copy = observation_copy(model, tokenizer, rows, exact_match_limit, window, part("observation copy", decoded))
    probe = action_probe(model, tokenizer, part("action probe", len(rows)).over(rows), window)
    return SftMetrics(
        loss, obs_ppl, pred_ppl, em, n, len(rows),
        copy.rate, copy.rows, copy.first_turn_rate, copy.first_turn_rows, copy.later_turn_rate, copy.later_turn_rows,
        probe.mutual_information, probe.demonstrated_prob, probe.rows,
    )  # fmt: skip
