"""From an SftRow to (input_ids, labels): the paper-faithful target and SPA's released variant.

Labels follow the Hugging Face convention: `labels[i]` is the token at position i, or -100 when
position i is not trained; the model shifts internally (logits at i-1 predict labels[i]).

- Paper-faithful (docs/spa-sft.md#target): prompt = chat template of the row's messages +
  generation prompt + `<think>` (the rollout format); target = the GT response without its leading
  `<think>`, + `<|im_end|>`; every target token is trained, no prompt token is.
- `StateMask` (ablations, docs/spa-sft.md#masking): `"transitions"` is the paper's masking
  ablation and excludes every target token whose characters overlap the *contents* of an
  `<observation>…</observation>` (current state) or `<prediction>…</prediction>` (next state)
  span; `"predictions"` excludes the `<prediction>` contents only. The tags themselves, the
  thoughts and the answer stay trained.
- Released (docs/spa-sft.md#released, `SPA/sft/spa_sft_dataset.py`): observation/prediction spans in
  prompt and response become the placeholders `<obs_content>`/`<pred_content>` (added special
  tokens), earlier assistant turns get a `<think></think>` prefix, the target starts with
  `</think>`, and the placeholder mask has SPA's off-by-one: the token *after* a placeholder is
  not trained while the placeholder itself is.
- Decision weights (docs/spa-sft.md#weights): `encode_faithful(..., decision_weight=W)` gives every
  target token outside the *contents* of `<observation>`/`<prediction>` (thoughts, tags, answer,
  end of turn: where the model decides) the loss weight W and the state contents 1; each row's loss
  is then its weighted mean over target tokens. W = 1 (the default) leaves `weights` None: the
  plain mean, exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..data.sft_rows import SftRow

IGNORE_INDEX = -100
OBS_PLACEHOLDER = "<obs_content>"
PRED_PLACEHOLDER = "<pred_content>"
_OBS_SPAN = re.compile(r"<observation>(.*?)</observation>", re.DOTALL)
_PRED_SPAN = re.compile(r"<prediction>(.*?)</prediction>", re.DOTALL)


StateMask = Literal["none", "transitions", "predictions"]
"""Which state contents leave the loss: none (SPA's method), both states (`transitions`, the
paper's masking ablation) or the next state only (`predictions`); docs/spa-sft.md#masking."""


@dataclass(frozen=True)
class Example:
    """One training sequence: token ids and their labels (same length), and optionally a loss
    weight per token (same length; None: every trained token weighs 1)."""

    input_ids: list[int]
    labels: list[int]
    weights: list[float] | None = None


def strip_leading_think(response: str) -> str:
    """The response without its leading `<think>` (the prompt ends with it)."""
    return response.removeprefix("<think>")


def content_spans(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Character ranges of every tag's contents (non-greedy, DOTALL, as SPA's regexes)."""
    return [m.span(1) for m in pattern.finditer(text)]


def observation_spans(text: str) -> list[tuple[int, int]]:
    """Contents of `<observation>…</observation>` spans in `text`."""
    return content_spans(text, _OBS_SPAN)


def prediction_spans(text: str) -> list[tuple[int, int]]:
    """Contents of `<prediction>…</prediction>` spans in `text`."""
    return content_spans(text, _PRED_SPAN)


def masked_spans(text: str, mask: StateMask) -> list[tuple[int, int]]:
    """The character ranges of `text` that `mask` takes out of the loss."""
    if mask == "transitions":
        return sorted(observation_spans(text) + prediction_spans(text))
    if mask == "predictions":
        return prediction_spans(text)
    return []


def tokens_in_spans(offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[bool]:
    """Per token: do its characters overlap any span? (Boundary tokens count as inside.) One
    comparison of every token with every span in torch: in Python it was a quarter of encoding."""
    if not spans:
        return [False] * len(offsets)
    tokens = torch.tensor(offsets, dtype=torch.long).reshape(-1, 2)
    within = torch.tensor(spans, dtype=torch.long)
    return ((within[:, 0] < tokens[:, 1:]) & (tokens[:, :1] < within[:, 1])).any(dim=1).tolist()


def faithful_texts(tokenizer: PreTrainedTokenizerBase, row: SftRow) -> tuple[str, str]:
    """(prompt text, target text) (docs/spa-sft.md#target)."""
    prompt = tokenizer.apply_chat_template(row.messages(), add_generation_prompt=True, tokenize=False)
    eos = str(tokenizer.eos_token or "")
    return str(prompt) + "<think>", strip_leading_think(row.response) + eos


def encode_pair(
    tokenizer: PreTrainedTokenizerBase, prompt: str, target: str
) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """`encode_pairs` of one prompt and target."""
    return encode_pairs(tokenizer, [(prompt, target)])[0]


def encode_pairs(
    tokenizer: PreTrainedTokenizerBase, pairs: Sequence[tuple[str, str]], window: int | None = None
) -> list[tuple[list[int], list[int], list[tuple[int, int]]]]:
    """Tokenise each prompt and target separately (as at inference, where the prompt is encoded
    alone and the target is generated) and return the targets' character offsets. One tokenizer
    call for all prompts and one for all targets: a fast tokenizer splits a batch across cores, and
    on tiny-cells one call per text took 1.6x as long as the batch.

    With a `window`, a prompt's ids may lack a prefix that a left-truncating window of that many
    tokens would drop anyway (`prompt_tails`): the last `window` ids of prompt + target are the same."""
    if not pairs:
        return []
    targets = tokenizer([t for _, t in pairs], add_special_tokens=False, return_offsets_mapping=True)
    if window is None:
        prompts = tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]
    else:
        needs = [window - len(ids) for ids in targets["input_ids"]]
        prompts = prompt_tails(tokenizer, [p for p, _ in pairs], needs)
    return [
        (list(prompt_ids), list(target_ids), [tuple(o) for o in offsets])
        for prompt_ids, target_ids, offsets in zip(prompts, targets["input_ids"], targets["offset_mapping"])
    ]


def prompt_tails(tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str], needs: Sequence[int]) -> list[list[int]]:
    """For each prompt, the ids of a suffix that starts at a special token (`<|im_start|>`…) and
    holds at least `need` tokens, or of the whole prompt. A fast tokenizer splits its input at
    special tokens before anything else, so such a suffix's ids are the whole prompt's last ids: a
    left-truncating window keeps the same tokens, and the earlier turns of a long multi-turn prompt
    (the default warm-up's rows: 900 prompt tokens, 167 kept) are never tokenized. The first suffix
    tried is the shortest with `need` characters (rarely fewer tokens than characters), then each
    retry starts twice as many special tokens further back, the last at the prompt's start. A
    tokenizer set to split special tokens (`split_special_tokens`) gets whole prompts."""
    splits = bool(getattr(tokenizer, "split_special_tokens", False))
    specials = [t for t in tokenizer.all_special_tokens if t and not splits]
    pattern = re.compile("|".join(re.escape(t) for t in specials)) if specials else None
    starts = [sorted({0, *(m.start() for m in pattern.finditer(p))}) if pattern else [0] for p in prompts]
    back = [sum(1 for start in s if len(p) - start < need) + 1 for s, p, need in zip(starts, prompts, needs)]
    tails: list[list[int]] = [[] for _ in prompts]
    pending = list(range(len(prompts)))
    while pending:
        cuts = [starts[i][max(len(starts[i]) - back[i], 0)] for i in pending]
        encoded = tokenizer([prompts[i][cut:] for i, cut in zip(pending, cuts)], add_special_tokens=False)
        left = []
        for i, cut, ids in zip(pending, cuts, encoded["input_ids"]):
            tails[i] = list(ids)
            if cut > 0 and len(ids) < needs[i]:
                left.append(i)
                back[i] *= 2
        pending = left
    return tails


def _left_truncate(example: Example, max_length: int) -> Example:
    # SPA cuts on the left (docs/spa-sft.md#target); labels and weights are cut with the ids, so they stay aligned.
    if len(example.input_ids) <= max_length:
        return example
    weights = example.weights[-max_length:] if example.weights is not None else None
    return Example(example.input_ids[-max_length:], example.labels[-max_length:], weights)


def decision_weights(target: str, offsets: list[tuple[int, int]], decision_weight: float) -> list[float] | None:
    """Per target token: 1 inside the contents of `<observation>`/`<prediction>` (the states),
    `decision_weight` elsewhere (thoughts, tags, answer, end of turn); None when the weight is 1
    (every token weighs the same: no weights). docs/spa-sft.md#weights."""
    if decision_weight == 1.0:
        return None
    state = tokens_in_spans(offsets, observation_spans(target) + prediction_spans(target))
    return [1.0 if s else decision_weight for s in state]


def weighted_token_mean(nll: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Each row's loss with decision weights, Σ w·nll / Σ w over its target tokens (those of
    `targets` that are not IGNORE_INDEX), tokens on the last axis (docs/spa-sft.md#weights)."""
    w = weights * (targets != IGNORE_INDEX)
    return (nll * w).sum(dim=-1) / w.sum(dim=-1)


def encode_faithful(
    tokenizer: PreTrainedTokenizerBase,
    row: SftRow,
    max_length: int = 2048,
    mask: StateMask = "none",
    decision_weight: float = 1.0,
) -> Example:
    """Paper-faithful example (docs/spa-sft.md#target), optionally with a state-masking ablation
    and decision weights (`decision_weights`; a masked token's weight is never read)."""
    return encode_faithful_rows(tokenizer, [row], max_length, [mask], decision_weight)[0]


def encode_faithful_rows(
    tokenizer: PreTrainedTokenizerBase,
    rows: Sequence[SftRow],
    max_length: int,
    masks: Sequence[StateMask],
    decision_weight: float,
) -> list[Example]:
    """`encode_faithful` of each row (with its own mask), the rows tokenized together (`encode_pairs`)."""
    texts = [faithful_texts(tokenizer, row) for row in rows]
    examples = []
    encoded = encode_pairs(tokenizer, texts, window=max_length)  # the tokens the window keeps
    for (_, target), mask, (prompt_ids, target_ids, offsets) in zip(texts, masks, encoded):
        masked = tokens_in_spans(offsets, masked_spans(target, mask))
        labels = [IGNORE_INDEX] * len(prompt_ids) + [IGNORE_INDEX if m else t for t, m in zip(target_ids, masked)]
        target_weights = decision_weights(target, offsets, decision_weight)
        weights = [1.0] * len(prompt_ids) + target_weights if target_weights is not None else None
        examples.append(_left_truncate(Example(prompt_ids + target_ids, labels, weights), max_length))
    return examples


def replace_states_with_placeholders(text: str) -> str:
    """SPA's `pre()`: observation spans → `<obs_content>`, then prediction spans → `<pred_content>`."""
    text = _OBS_SPAN.sub(lambda _m: OBS_PLACEHOLDER, text)
    return _PRED_SPAN.sub(lambda _m: PRED_PLACEHOLDER, text)


def released_texts(tokenizer: PreTrainedTokenizerBase, row: SftRow) -> tuple[str, str]:
    """(prompt text, response text) exactly as `spa_sft_dataset.py` builds them (docs/spa-sft.md#released)."""
    messages = []
    for m in row.messages():
        content = replace_states_with_placeholders(m["content"])
        if m["role"] == "assistant":
            content = "<think></think>" + content  # with_thinking=True
        messages.append({"role": m["role"], "content": content})
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    eos = str(tokenizer.eos_token or "")
    return str(prompt) + "<think>", "</think>" + replace_states_with_placeholders(row.response) + eos


def encode_released(tokenizer: PreTrainedTokenizerBase, row: SftRow, max_length: int = 2048) -> Example:
    """Released-code example: response tokens trained except those right after a placeholder."""
    prompt, response = released_texts(tokenizer, row)
    prompt_ids, response_ids, _ = encode_pair(tokenizer, prompt, response)
    ids = prompt_ids + response_ids
    placeholder_ids = tokenizer.convert_tokens_to_ids([OBS_PLACEHOLDER, PRED_PLACEHOLDER])
    assert isinstance(placeholder_ids, list)  # a list of tokens in, a list of ids out
    placeholders = set(placeholder_ids)
    # verl's loss mask entry j (for predicting token j+1) is 0 when input token j is a
    # placeholder: so label j+1 is dropped and the placeholder's own label is kept.
    labels = [
        tok if i >= len(prompt_ids) and ids[i - 1] not in placeholders else IGNORE_INDEX for i, tok in enumerate(ids)
    ]
    return _left_truncate(Example(ids, labels), max_length)


def add_released_placeholders(tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel) -> None:
    """Add `<obs_content>`/`<pred_content>` as special tokens and resize the embeddings to
    `len(tokenizer)`, as `_setup_special_tokens` does (for Qwen2.5 this *shrinks* the padded
    151 936-row matrix to 151 667 rows)."""
    tokenizer.add_tokens([OBS_PLACEHOLDER, PRED_PLACEHOLDER], special_tokens=True)
    model.resize_token_embeddings(len(tokenizer))
