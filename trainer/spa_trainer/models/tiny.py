"""The `tiny` policy: a small Qwen2-architecture causal LM plus a BPE tokenizer trained on SPA text.

Both are deterministic: the tokenizer is trained on `tiny_corpus.corpus_lines()` (same bytes
every build, tested by hashing `tokenizer.json`), the model is initialised from a fixed seed.
The result is saved as an ordinary Hugging Face folder (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json with Qwen2.5's chat template), so every code path that
takes "any local HF folder" (SFT, PPO, export, the TS generator) also takes `tiny`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict

import torch
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    trainers,
)
from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from .qwen_template import (
    ENDOFTEXT,
    IM_END,
    QWEN25_CHAT_TEMPLATE,
    QWEN_PRETOKENIZE_REGEX,
    QWEN_SPECIAL_TOKENS,
    SPA_TAG_TOKENS,
)
from .tiny_corpus import corpus_lines, repo_root


@dataclass(frozen=True)
class TinySpec:
    """Size and seed of the tiny model. Part of the cache key, so changing it rebuilds."""

    vocab_size: int = 1536
    hidden_size: int = 64
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096
    seed: int = 0
    grid_cell_tokens: bool = False  # one token per Sokoban grid cell (see GRID_CELL_REGEX)
    # Qwen2.5's RoPE base. With head size 16 and a few-hundred-token window, base 1e6 leaves only
    # 2-3 of the 8 rotary frequencies turning within the window; 1e4 gives the position signal
    # that copying the observation into the prediction needs (docs/learning-check.md).
    rope_theta: float = 1_000_000.0
    builder_version: int = 1
    # Local attention (docs/spa-models.md#local): the first `sliding_layers` layers attend only to
    # the last `sliding_window` positions (the token itself included), the later layers to the
    # whole sequence. 0 = every layer global; both fields are then left out of the cache key and
    # tiny_spec.json, so the models defined before they existed keep their folders.
    sliding_window: int = 0
    sliding_layers: int = 1


DEFAULT_SPEC = TinySpec()
"""The spec of the `tiny` model every test uses."""

TINY_MODELS: dict[str, TinySpec] = {
    "tiny": DEFAULT_SPEC,
    # one token per Sokoban grid cell and RoPE base 1e4: the configuration that learns the
    # world model in docs/learning-check.md
    "tiny-cells": TinySpec(grid_cell_tokens=True, rope_theta=1e4),
    # tiny-cells with layer 1 limited to a 48-token window (layer 2 global): attention spread over
    # a long prompt keeps a fresh 2-layer model from conditioning on the board
    "tiny-local": TinySpec(grid_cell_tokens=True, rope_theta=1e4, sliding_window=48),
}
"""The models `--model <name>` builds locally (random weights), by name."""

MODEL_25M = TinySpec(
    hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2
)
"""The larger model of `npm run bench -- generate` and `npm run gpu-check`: the tiny tokenizer under a
Qwen2 of hidden 512, 8 layers, 8 heads (2 KV heads), MLP 1536: 24.6 M parameters."""


GRID_CELL_REGEX = r"[#_√]|(?<=[#_√OXPS])[OXPS]|[OXPS](?=[#_√OXPS])"
"""A Sokoban render cell (`# _ O √ X P S`): walls, floor and box-on-target always; the letters
when they touch another cell, so `Player` or `(X)` in prose stay whole."""


def train_tiny_tokenizer(spec: TinySpec = DEFAULT_SPEC) -> Tokenizer:
    """Byte-level BPE with Qwen2's pre-tokenizer, trained on the deterministic SPA corpus.

    Byte-level means every string (`√`, `–`, `\\n`) round-trips exactly; Qwen's control tokens
    get ids 0–2 and SPA's tags are appended as single non-special tokens. With
    `spec.grid_cell_tokens` every grid cell is isolated before Qwen's split, so BPE cannot merge
    cells into row tokens (`#PX`, `__#\\n`) and moving one cell edits one token.
    """
    tokenizer = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()  # as Qwen2's tokenizer.json
    cell_split = [pre_tokenizers.Split(Regex(GRID_CELL_REGEX), behavior="isolated")] if spec.grid_cell_tokens else []
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            *cell_split,
            pre_tokenizers.Split(Regex(QWEN_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size - len(SPA_TAG_TOKENS),
        min_frequency=1,
        show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in QWEN_SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus_lines(), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in SPA_TAG_TOKENS])
    return tokenizer


def wrap_tokenizer(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    """Give a raw `tokenizers.Tokenizer` Qwen2.5-Instruct's HF settings (eos, pad, chat template)."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,  # Qwen2.5-Instruct: generation stops at <|im_end|>
        pad_token=ENDOFTEXT,
        chat_template=QWEN25_CHAT_TEMPLATE,
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
    )


def spec_fields(spec: TinySpec) -> dict[str, object]:
    """The spec as the cache key and tiny_spec.json record it: every field, except the local-attention
    ones when there is no window (so specs written before they existed keep their digests)."""
    fields = asdict(spec)
    if spec.sliding_window == 0:
        del fields["sliding_window"], fields["sliding_layers"]
    return fields


def layer_types(spec: TinySpec) -> list[str]:
    """transformers' per-layer attention kinds: `sliding_attention` for the leading windowed layers."""
    return [
        "sliding_attention" if spec.sliding_window and i < spec.sliding_layers else "full_attention"
        for i in range(spec.num_hidden_layers)
    ]


class AttentionConfig(TypedDict, total=False):
    """The Qwen2Config arguments of local attention."""

    use_sliding_window: bool
    sliding_window: int
    layer_types: list[str]


def attention_config(spec: TinySpec) -> AttentionConfig:
    """Qwen2Config arguments for the spec's local attention (none without a window).

    Qwen2Config keeps `sliding_window` only with `use_sliding_window=True` (else it sets it to None),
    and derives `layer_types` from `max_window_layers` only when they are not given, marking the
    layers *from* `max_window_layers` on as sliding, so leading sliding layers need `layer_types`
    written out. config.json then carries all three and `from_pretrained` restores them as they are.
    """
    if spec.sliding_window < 0 or (spec.sliding_window and not 1 <= spec.sliding_layers <= spec.num_hidden_layers):
        raise ValueError(f"sliding_window {spec.sliding_window}, sliding_layers {spec.sliding_layers}: out of range")
    if spec.sliding_window == 0:
        return {}
    return {"use_sliding_window": True, "sliding_window": spec.sliding_window, "layer_types": layer_types(spec)}


def build_tiny(out_dir: Path, spec: TinySpec = DEFAULT_SPEC) -> Path:
    """Train the tokenizer, initialise the model from `spec.seed`, save both to `out_dir`."""
    tokenizer = train_tiny_tokenizer(spec)
    hf_tokenizer = wrap_tokenizer(tokenizer)
    endoftext, im_end = tokenizer.token_to_id(ENDOFTEXT), tokenizer.token_to_id(IM_END)
    config = Qwen2Config(
        vocab_size=len(hf_tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        tie_word_embeddings=True,  # as Qwen2.5-0.5B/1.5B
        bos_token_id=endoftext,
        eos_token_id=im_end,
        pad_token_id=endoftext,
        **attention_config(spec),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    hf_tokenizer.save_pretrained(out_dir)
    # transformers maps model_type qwen2 to its Qwen2 tokenizer class, which normalises some
    # settings on load; re-save through it so tokenizer.json is byte-for-byte what Python runs
    # (the TS generator reads the same file).
    AutoTokenizer.from_pretrained(out_dir).save_pretrained(out_dir)
    (out_dir / "tiny_spec.json").write_text(json.dumps(spec_fields(spec), indent=2), encoding="utf-8")
    return out_dir


def spec_digest(spec: TinySpec) -> str:
    """Short hash of the spec and corpus, naming the cache folder."""
    h = hashlib.sha256(json.dumps(spec_fields(spec), sort_keys=True).encode())
    for line in corpus_lines():
        h.update(line.encode("utf-8"))
    return h.hexdigest()[:12]


def tiny_model_dir(spec: TinySpec = DEFAULT_SPEC, cache_root: Path | None = None) -> Path:
    """The cached `tiny` folder, built on first use (atomically: temp folder, then rename).

    Cache root: `$SPA_TINY_CACHE`, else `trainer/.cache/`.
    """
    root = cache_root or Path(os.environ.get("SPA_TINY_CACHE", repo_root() / "trainer" / ".cache"))
    final = root / f"tiny-{spec_digest(spec)}"
    if (final / "config.json").exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-build-", dir=root))
    try:
        build_tiny(tmp, spec)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "config.json").exists():  # lost a race only if the winner finished
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def rescale_weights(model: torch.nn.Module, seed: int, scale: float) -> None:
    """Redraw every matrix of `model` from N(0, (0.02 × scale)²), seeded (tied embeddings appear once).

    The tiny models' own init (std 0.02) gives near-uniform logits whose greedy decode repeats one
    token forever, and whose argmax two runtimes may break differently; scale 8 gives varied,
    input-dependent greedy text with clear margins, so "the same greedy tokens" tests something."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.02 * scale)
