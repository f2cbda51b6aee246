"""From Rollout records to one left-padded token batch with masks and scores (docs/spa-ppo.md#sequence).

A Rollout (schemas/Rollout.avsc) is one multi-turn PPO episode: the whole conversation
(system, user, assistant, …, last assistant) becomes **one** token sequence through the chat
template with `add_generation_prompt=False`, exactly as RAGEN's `get_lm_inputs(prepare_for_update=True)`.
With a prompt window (a policy that generated from cut prompts), each assistant turn becomes a row
of its own instead, cut as the generator cut it (docs/spa-ppo.md#window).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from ..models.load import pad_token_id
from .functional import MaskMode, loss_mask, score_tensor, select_groups_by_std, turn_indicators

IM_START = "<|im_start|>"
THINK_OPEN = "<think>"
"""What the generator appends to every generation prompt; assistant contents start with it
(docs/spa-models.md#template), but the policy did not sample it."""
Rollout = Mapping[str, Any]
"""A decoded `spa.v1.Rollout` record: trajectory_id, group_id, env, seed, policy_version,
messages [{role, content}], turn_rewards, penalty, score, success, num_turns."""

_REQUIRED = ("trajectory_id", "group_id", "policy_version", "messages", "turn_rewards", "penalty", "success")


def total_score(record: Rollout) -> float:
    """`Σ turn_rewards + penalty`, the scalar on the last token (docs/spa-ppo.md#sequence). When the record
    carries `score` too, the two must agree: a mismatch means the producer and the trainer
    disagree about the reward, which would silently train on the wrong signal."""
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise ValueError(f"rollout {record.get('trajectory_id', '?')!r} lacks fields {missing}")
    total = float(sum(record["turn_rewards"])) + float(record["penalty"])
    stated = record.get("score")
    if stated is not None and not math.isclose(total, float(stated), rel_tol=1e-9, abs_tol=1e-9):
        raise ValueError(f"rollout {record['trajectory_id']!r}: score {stated} != Σ turn_rewards + penalty = {total}")
    return total


def staleness_histogram(records: Sequence[Rollout], trainer_version: int) -> dict[int, int]:
    """`{trainer_version − record.policy_version: count}`, sorted by lag (0 = on-policy)."""
    lags = Counter(trainer_version - int(r["policy_version"]) for r in records)
    return dict(sorted(lags.items()))


def filter_groups(records: Sequence[Rollout], keep_ratio: float) -> list[Rollout]:
    """Records of the groups with the largest in-group std of total score (docs/spa-ppo.md#group-filter), in
    input order. Ties are broken by the group's first appearance (see `select_groups_by_std`)."""
    by_group: dict[str, list[float]] = {}
    for r in records:
        by_group.setdefault(str(r["group_id"]), []).append(total_score(r))
    kept = set(select_groups_by_std(list(by_group.items()), keep_ratio))
    return [r for r in records if str(r["group_id"]) in kept]


@dataclass(frozen=True)
class RolloutBatch:
    """Tensors of one batch. `(B, T)`: input_ids, attention_mask, position_ids. Response axis
    `(B, T − 1)`: response_mask (loss mask of the chosen mode), token_rewards, and `extras`
    computed later (old log-probs, values, advantages, returns). `(B,)`: scores."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    response_mask: torch.Tensor
    token_rewards: torch.Tensor
    scores: torch.Tensor
    # `(B,)`: the index of each row's episode in the batch (rows of an episode are adjacent): the
    # row itself with one sequence per episode, its episode with one row per turn (#window).
    episodes: torch.Tensor
    extras: Mapping[str, torch.Tensor] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Number of sequences."""
        return int(self.input_ids.shape[0])

    def select(self, rows: slice | torch.Tensor) -> RolloutBatch:
        """The given rows, with left padding shared by all of them trimmed (cheaper forward
        passes; positions come from `position_ids`, so trimming changes no result)."""
        attention = self.attention_mask[rows]
        start = int(attention.any(dim=0).nonzero()[0])
        return RolloutBatch(
            input_ids=self.input_ids[rows][:, start:],
            attention_mask=attention[:, start:],
            position_ids=self.position_ids[rows][:, start:],
            response_mask=self.response_mask[rows][:, start:],
            token_rewards=self.token_rewards[rows][:, start:],
            scores=self.scores[rows],
            episodes=self.episodes[rows],
            extras={k: v[rows][:, start:] for k, v in self.extras.items()},
        )

    def with_extras(self, **tensors: torch.Tensor) -> RolloutBatch:
        """A copy carrying more response-axis tensors `(B, T − 1)`."""
        for name, t in tensors.items():
            if t.shape != self.response_mask.shape:
                raise ValueError(
                    f"extra {name!r} has shape {tuple(t.shape)}, expected {tuple(self.response_mask.shape)}"
                )
        return replace(self, extras={**self.extras, **tensors})

    def to(self, device: torch.device) -> RolloutBatch:
        """The same batch on `device`."""
        return RolloutBatch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            position_ids=self.position_ids.to(device),
            response_mask=self.response_mask.to(device),
            token_rewards=self.token_rewards.to(device),
            scores=self.scores.to(device),
            episodes=self.episodes.to(device),
            extras={k: v.to(device) for k, v in self.extras.items()},
        )


def _episode_messages(record: Rollout) -> list[dict[str, str]]:
    """The episode's `{role, content}` messages; they must end with an assistant message (the
    trailing reward message is not part of a training sequence, docs/spa-prompts.md#conversation)."""
    messages = [{"role": m["role"], "content": m["content"]} for m in record["messages"]]
    if not messages or messages[-1]["role"] != "assistant":
        last = messages[-1]["role"] if messages else "nothing"
        raise ValueError(f"rollout {record['trajectory_id']!r} ends with {last}; expected the last assistant message")
    return messages


def render_conversation(record: Rollout, tokenizer: PreTrainedTokenizerBase) -> str:
    """The chat-template text of the whole episode (`_episode_messages`)."""
    text = tokenizer.apply_chat_template(_episode_messages(record), add_generation_prompt=False, tokenize=False)
    assert isinstance(text, str)
    return text


def sampled_spans(record: Rollout, text: str, tokenizer: PreTrainedTokenizerBase) -> list[tuple[int, int]]:
    """Character spans of `text` (the rendered conversation) that the policy sampled: in each
    assistant turn, what follows the generation prompt and its `<think>`, up to and including the
    end-of-turn token the template writes after the content when that is the tokenizer's eos
    (generation stops there; docs/spa-ppo.md#mask). Needs a chat template under which every
    generation prompt is a prefix of the whole conversation, as Qwen's and Llama 3's are."""
    messages = _episode_messages(record)
    spans = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = tokenizer.apply_chat_template(messages[:i], add_generation_prompt=True, tokenize=False)
        assert isinstance(prompt, str)
        content = message["content"]
        if not text.startswith(prompt + content):
            raise ValueError(
                f"rollout {record['trajectory_id']!r}: turn {i} of the rendered conversation does not start with its "
                "generation prompt, so the sampled tokens cannot be located; use --mask response-only"
            )
        start = len(prompt) + (len(THINK_OPEN) if content.startswith(THINK_OPEN) else 0)
        end = len(prompt) + len(content)
        eos = tokenizer.eos_token
        if isinstance(eos, str) and text.startswith(eos, end):
            end += len(eos)
        spans.append((start, end))
    return spans


def _sampled_token_flags(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[bool]:
    """Per token: does it lie inside one of the sampled character spans?"""
    return [any(lo <= a and b <= hi for lo, hi in spans) and b > a for a, b in offsets]


def _left_padded(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(input_ids, attention_mask, position_ids)`, `(B, T)`: the rows left padded to the longest.
    Positions count real tokens only, as verl computes them: a left-padded row sees the same
    positions as the unpadded sequence (RoPE would not mind a shift; absolute embeddings would)."""
    seq_len = max(len(ids) for ids in rows)
    input_ids = torch.full((len(rows), seq_len), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), seq_len), dtype=torch.long)
    for row, ids in enumerate(rows):
        input_ids[row, seq_len - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, seq_len - len(ids) :] = 1
    position_ids = (attention_mask.cumsum(dim=-1) - 1).clamp(min=0)
    return input_ids, attention_mask, position_ids


def _left_padded_flags(rows: Sequence[Sequence[bool]], seq_len: int) -> torch.Tensor:
    """Per-token flags `(B, seq_len)`, left padded with False like `_left_padded`'s ids."""
    flags = torch.zeros((len(rows), seq_len), dtype=torch.bool)
    for row, values in enumerate(rows):
        flags[row, seq_len - len(values) :] = torch.tensor(values, dtype=torch.bool)
    return flags


def turn_rows(
    record: Rollout, tokenizer: PreTrainedTokenizerBase, prompt_budget: int
) -> list[tuple[list[int], list[bool]]]:
    """One `(ids, sampled flags)` row per assistant turn, as the generator saw and sampled it
    (docs/spa-ppo.md#window): the turn's generation prompt (+ the `<think>` the generator appends
    when the content starts with it), tokenized and cut to its rightmost `prompt_budget` tokens as
    the ONNX policy cuts it (`contextWindow − maxNewTokens`), then the sampled content and the
    end-of-turn token when the template writes the tokenizer's eos right after it (as
    `sampled_spans`). Only the content's and that eos's tokens are flagged as sampled."""
    if prompt_budget < 1:
        raise ValueError(f"prompt_budget {prompt_budget}: expected a positive number of prompt tokens")
    messages = _episode_messages(record)
    eos, eos_id = tokenizer.eos_token, tokenizer.eos_token_id
    rows = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = tokenizer.apply_chat_template(messages[:i], add_generation_prompt=True, tokenize=False)
        whole = tokenizer.apply_chat_template(messages[: i + 1], add_generation_prompt=False, tokenize=False)
        assert isinstance(prompt, str) and isinstance(whole, str)
        content = message["content"]
        if not whole.startswith(prompt + content):
            raise ValueError(
                f"rollout {record['trajectory_id']!r}: turn {i} does not follow its generation prompt in the "
                "chat template, so the generator's prompt cannot be rebuilt"
            )
        think = THINK_OPEN if content.startswith(THINK_OPEN) else ""
        prompt_ids = tokenizer(prompt + think, add_special_tokens=False)["input_ids"][-prompt_budget:]
        sampled_ids = tokenizer(content[len(think) :], add_special_tokens=False)["input_ids"]
        if isinstance(eos, str) and isinstance(eos_id, int) and whole.startswith(eos, len(prompt) + len(content)):
            sampled_ids = [*sampled_ids, eos_id]
        rows.append(([*prompt_ids, *sampled_ids], [False] * len(prompt_ids) + [True] * len(sampled_ids)))
    return rows


def build_batch(
    records: Sequence[Rollout],
    tokenizer: PreTrainedTokenizerBase,
    mask_mode: MaskMode,
    prompt_budget: int | None = None,
) -> RolloutBatch:
    """Tokenise, left pad, and derive masks and scores for every record (docs/spa-ppo.md#sequence);
    with `prompt_budget`, one row per assistant turn instead (`turn_rows`, docs/spa-ppo.md#window),
    each carrying its episode's score on its last token."""
    if not records:
        raise ValueError("build_batch needs at least one rollout")
    if prompt_budget is not None:
        return _turn_batch(records, tokenizer, mask_mode, prompt_budget)
    texts = [render_conversation(r, tokenizer) for r in records]
    encoded = [tokenizer(t, add_special_tokens=False, return_offsets_mapping=mask_mode == "generated") for t in texts]
    input_ids, attention_mask, position_ids = _left_padded([e["input_ids"] for e in encoded], pad_token_id(tokenizer))
    seq_len = input_ids.shape[1]
    if mask_mode == "generated":
        if not tokenizer.is_fast:
            raise ValueError("--mask generated needs a fast tokenizer (character offsets); use --mask response-only")
        flags = [
            _sampled_token_flags(e["offset_mapping"], sampled_spans(record, text, tokenizer))
            for record, text, e in zip(records, texts, encoded, strict=True)
        ]
        # Entry j of the response axis trains the prediction of token j + 1.
        response_mask = _left_padded_flags(flags, seq_len)[:, 1:]
    else:
        im_start_id = tokenizer.convert_tokens_to_ids(IM_START)
        if not isinstance(im_start_id, int) or im_start_id == tokenizer.unk_token_id:
            raise ValueError(
                f"tokenizer has no {IM_START} token; --mask {mask_mode} expects a Qwen-style chat tokenizer"
            )
        # Pad ids are masked out of the indicator count so a pad id that equals <|im_start|> can't
        # shift turns.
        indicators = turn_indicators(input_ids.masked_fill(attention_mask == 0, -1), im_start_id)
        response_mask = loss_mask(indicators, mask_mode)
    scores = torch.tensor([total_score(r) for r in records], dtype=torch.float32)
    return RolloutBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        response_mask=response_mask,
        token_rewards=score_tensor(scores, seq_len),
        scores=scores,
        episodes=torch.arange(len(records)),
    )


def _turn_batch(
    records: Sequence[Rollout], tokenizer: PreTrainedTokenizerBase, mask_mode: MaskMode, prompt_budget: int
) -> RolloutBatch:
    """`build_batch` with one left-padded row per assistant turn (`turn_rows`)."""
    if mask_mode != "generated":
        raise ValueError(
            f"--mask {mask_mode} with a context window: a turn row holds only what the generator saw, so only "
            "--mask generated (the tokens the policy sampled) applies"
        )
    rows, episodes, row_scores = [], [], []
    for index, record in enumerate(records):
        score = total_score(record)
        for row in turn_rows(record, tokenizer, prompt_budget):
            rows.append(row)
            episodes.append(index)
            row_scores.append(score)
    # Each row's positions start at 0, as the ONNX policy numbers a cut prompt.
    input_ids, attention_mask, position_ids = _left_padded([ids for ids, _ in rows], pad_token_id(tokenizer))
    seq_len = input_ids.shape[1]
    scores = torch.tensor(row_scores, dtype=torch.float32)
    return RolloutBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        response_mask=_left_padded_flags([flags for _, flags in rows], seq_len)[:, 1:],
        token_rewards=score_tensor(scores, seq_len),
        scores=scores,
        episodes=torch.tensor(episodes, dtype=torch.long),
    )
