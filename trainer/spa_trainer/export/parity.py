"""The exported graph against PyTorch: the same logits and cache, fed the way the generator feeds it.

The reference is `KvCacheLM`, HF's eager forward through a whole cache with logits at every
position; the graph (graph.py) takes its cache in two parts and returns the last position only, so
a check compares each call's last-position logits and the cache columns it returns, and keeps the
graph's cache split as the generator does (`OnnxCache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import DynamicCache, PreTrainedModel

from .graph import io_names, kv_shape


class KvCacheLM(torch.nn.Module):
    """PyTorch reference: (ids, mask, positions, *past) → (logits at every position, *whole present).

    The cache is a `DynamicCache()` without the model's config, so no layer trims its keys (HF's
    own cache keeps only the window for a sliding layer): present = past + new for every layer, and
    transformers' sliding-window mask (key index > query index − window) does the windowing.
    """

    def __init__(self, model: PreTrainedModel) -> None:
        super().__init__()
        self.model = model
        self.num_layers = int(model.config.num_hidden_layers)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, *past: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        cache = DynamicCache()
        for i in range(self.num_layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        present: list[torch.Tensor] = []
        for layer in out.past_key_values.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


class OnnxCache:
    """The exported graph's cache between calls, in its two parts: `past` (settled) and `recent`
    (what the last call returned). Folded every `fold_every` calls, so a check runs calls with
    `recent` empty and non-empty and `past` empty and non-empty (the generator folds by length)."""

    def __init__(self, num_layers: int, kv_heads: int, head_dim: int, batch: int, fold_every: int = 2) -> None:
        self.past = [np.zeros((batch, kv_heads, 0, head_dim), np.float32) for _ in range(2 * num_layers)]
        self.recent = list(self.past)
        self.names, _ = io_names(num_layers)
        self.fold_every, self.calls = fold_every, 0

    @classmethod
    def of(cls, model: PreTrainedModel, batch: int) -> OnnxCache:
        """An empty cache for `batch` rows of `model`'s graph."""
        return cls(int(model.config.num_hidden_layers), *kv_shape(model), batch)

    @classmethod
    def of_artifact(cls, manifest: dict[str, int], batch: int) -> OnnxCache:
        """An empty cache for `batch` rows of an artifact's graph (its manifest.json)."""
        return cls(manifest["num_layers"], manifest["num_key_value_heads"], manifest["head_dim"], batch)

    @property
    def whole(self) -> list[np.ndarray]:
        """Both parts joined: the whole cache, as `KvCacheLM` takes it."""
        return [np.concatenate([p, r], axis=2) for p, r in zip(self.past, self.recent)]

    def run(
        self, session: ort.InferenceSession, ids: np.ndarray, mask: np.ndarray, positions: np.ndarray
    ) -> list[np.ndarray]:
        """One call: (last-position logits, *present); `present` becomes the new `recent`."""
        feeds = dict(zip(self.names, [ids, mask, positions, *self.past, *self.recent]))
        out = [np.asarray(o) for o in session.run(None, feeds)]
        self.calls += 1
        if self.calls % self.fold_every == 0:
            self.past, self.recent = (
                [np.concatenate([p, r], axis=2) for p, r in zip(self.past, out[1:])],
                [r[:, :, :0] for r in out[1:]],
            )
        else:
            self.recent = out[1:]
        return out


@dataclass(frozen=True)
class Parity:
    """Max |onnxruntime − PyTorch| over last-position logits and returned cache columns for a prompt."""

    no_cache: float
    with_cache: float


def compare_chunks(
    model: PreTrainedModel, session: ort.InferenceSession, input_ids: list[int], chunks: list[int]
) -> list[float]:
    """Feed `input_ids` in `chunks` (token counts, summing to its length) through the cache, to
    onnxruntime and to PyTorch (`KvCacheLM`, so with the same whole cache); the max |difference|
    over the last position's logits and the new cache columns of each call. PyTorch continues
    from onnxruntime's cache."""
    if sum(chunks) != len(input_ids) or min(chunks) < 1:
        raise ValueError(f"chunks {chunks} do not split {len(input_ids)} tokens")
    reference = KvCacheLM(model.eval())
    device = next(model.parameters()).device  # PyTorch on the model's device, onnxruntime on CPU
    cache = OnnxCache.of(model, batch=1)
    diffs: list[float] = []
    start = 0
    for size in chunks:
        ids = np.array([input_ids[start : start + size]], np.int64)
        mask = np.ones((1, start + size), np.int64)
        positions = np.arange(start, start + size, dtype=np.int64)[None]
        whole = cache.whole
        recent = whole[0].shape[2] - cache.past[0].shape[2]  # columns of `recent` fed this call
        with torch.no_grad():
            out = reference(*(torch.from_numpy(a).to(device) for a in (ids, mask, positions, *whole)))
        logits, *present = (t.cpu().numpy() for t in out)
        got_logits, *got_present = cache.run(session, ids, mask, positions)
        diffs.append(
            max(
                float(np.abs(got_logits - logits[:, -1:]).max()),
                *(float(np.abs(g - r[:, :, start - recent :]).max()) for g, r in zip(got_present, present)),
            )
        )
        start += size
    return diffs


def check_parity(model: PreTrainedModel, onnx_path: Path, input_ids: list[int], split: int | None = None) -> Parity:
    """Run the prompt whole with empty caches, and through the cache: a prefix, then the rest one
    token a call (so every position's logits are compared, and both cache parts are used)."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    cut = split if split is not None else max(1, len(input_ids) // 2)
    (whole,) = compare_chunks(model, session, input_ids, [len(input_ids)])
    with_cache = compare_chunks(model, session, input_ids, [cut] + [1] * (len(input_ids) - cut))
    return Parity(no_cache=whole, with_cache=max(with_cache))


def sliding_window(model: PreTrainedModel) -> int | None:
    """The attention window of the model's sliding layers (transformers' `sliding_window` with a
    `sliding_attention` entry in `layer_types`, or no `layer_types` at all as in Mistral), else None."""
    window = getattr(model.config, "sliding_window", None)
    types = getattr(model.config, "layer_types", None)
    if not window or (types is not None and "sliding_attention" not in types):
        return None
    return int(window)


@dataclass(frozen=True)
class WindowParity:
    """Parity of a sliding-window model past its window (docs/spa-models.md#local).

    `prompt`: max |onnxruntime − PyTorch| on a prompt of `tokens` > window, whole with empty caches.
    `decode`: the same prompt through the cache in `chunks`: one under the window, one across it,
    one beyond it, then single-token decoding steps whose past already exceeds the window.
    `window_effect`: max |PyTorch logits − the same model's with every layer global| on that
    prompt: what a graph that lost the window would be off by (it must exceed the tolerance for
    the parity to tell).
    """

    window: int
    tokens: int
    chunks: tuple[int, ...]
    prompt: float
    decode: float
    window_effect: float


def window_parity_ids(prompt_ids: list[int], window: int, vocab_size: int) -> tuple[list[int], list[int]]:
    """(ids, chunks) of the window check: `prompt_ids` followed by seeded random ids up to
    2 × window + 8 tokens, and its chunks (under, across and beyond the window, then 4 decoding steps)."""
    first = max(1, window - 8)
    decode = [1, 1, 1, 1]
    tokens = max(2 * window + 8, first + 16 + 1 + len(decode))
    filler = torch.randint(vocab_size, (tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    ids = (list(prompt_ids) + filler)[:tokens]
    return ids, [first, 16, tokens - first - 16 - len(decode), *decode]


def window_effect(model: PreTrainedModel, input_ids: list[int]) -> float:
    """Max |logits − logits with a plain causal mask on every layer| (a 4D mask is used as given,
    by the sliding layers too)."""
    device = next(model.parameters()).device
    ids = torch.tensor([input_ids], device=device)
    n = len(input_ids)
    causal = torch.full((n, n), torch.finfo(torch.float32).min, device=device).triu(1)[None, None]
    with torch.no_grad():
        windowed = model(input_ids=ids).logits
        unwindowed = model(input_ids=ids, attention_mask=causal).logits
    return float((windowed - unwindowed).abs().max())


def check_window_parity(model: PreTrainedModel, onnx_path: Path, prompt_ids: list[int]) -> WindowParity | None:
    """`WindowParity` of a model with sliding-window layers, None for one without."""
    window = sliding_window(model)
    if window is None:
        return None
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids, chunks = window_parity_ids(prompt_ids, window, int(model.config.vocab_size))
    (prompt,) = compare_chunks(model, session, ids, [len(ids)])
    decode = max(compare_chunks(model, session, ids, chunks))
    return WindowParity(window, len(ids), tuple(chunks), prompt, decode, window_effect(model, ids))
