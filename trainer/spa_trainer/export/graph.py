"""The graph the generator runs, traced from the Hugging Face model (TorchScript exporter).

Interface (batch-first, fp32; `L` layers, `kv` KV heads, `d` head dim):
  inputs   input_ids [b, s] int64, attention_mask [b, past+recent+s] int64, position_ids [b, s] int64,
           past_key_values.{i}.key / .value [b, kv, past, d]      the settled cache columns
           recent.{i}.key / .value [b, kv, recent, d]            the newest cache columns
  outputs  logits [b, 1, vocab]                                  each row's last position only
           present.{i}.key / .value [b, kv, recent+s, d]         `recent` with this call's columns
Attention reads `past ++ recent ++ new`; the caller keeps the cache in two parts and folds
`present` into `past` now and then (policies/onnx/kv-cache.ts).

Three things make it the generator's graph rather than HF's eager forward as is, each because of
a cost measured on the TS side (policies/onnx/README.md#speed):
- **Split cache**: onnxruntime-node copies every output into a fresh JS buffer, so a graph that
  returned the whole cache copied all of it out on every decoding step; this one returns only the
  newest columns (`SplitCacheLayer`).
- **Last-position logits**: the sampler reads each row's last position only, and a prompt pass
  over all positions computes and copies `batch × prompt × vocab` floats (2.9 GB for 8 × 600
  tokens at Qwen's 152k vocabulary); the LM head runs on the last position (HF's
  `logits_to_keep=1`).
- **Grouped attention**: HF's eager attention copies each KV head `heads / kv_heads` times
  (`repeat_kv`) on every call; `grouped_attention` lets MatMul broadcast the KV head instead.
Each is a property of the written graph, checked by `structure.graph_structure`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from transformers import AttentionInterface, DynamicLayer, PreTrainedModel
from transformers.cache_utils import Cache
from transformers.masking_utils import AttentionMaskInterface, eager_mask

GROUPED = "spa_grouped"
"""transformers attention implementation name of `grouped_attention` (eager's mask)."""


def grouped_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention without `repeat_kv`: the query `[b, H, s, d]` viewed as `[b, kv, rep, s, d]`
    against the unsqueezed key `[b, kv, 1, d, L]` (MatMul broadcasts `rep` without copying), and
    the same for the weights and the value. Each head still multiplies an `s × d` by a `d × L`
    matrix; the scale stays right after its MatMul so onnxruntime fuses the two."""
    batch, heads, seq, head_dim = query.shape
    kv_heads = key.shape[1]
    grouped = query.reshape(batch, kv_heads, heads // kv_heads, seq, head_dim)
    scores = torch.matmul(grouped, key.unsqueeze(2).transpose(3, 4)) * scaling
    weights = scores.reshape(batch, heads, seq, -1)
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    out = torch.matmul(weights.reshape(batch, kv_heads, heads // kv_heads, seq, -1), value.unsqueeze(2))
    return out.reshape(batch, heads, seq, head_dim).transpose(1, 2).contiguous(), weights


AttentionInterface.register(GROUPED, grouped_attention)
AttentionMaskInterface.register(GROUPED, eager_mask)


@contextmanager
def attention_implementation(model: PreTrainedModel, name: str) -> Iterator[None]:
    """`model` runs attention `name` inside the block, its own implementation again after it."""
    before = model.config._attn_implementation or "eager"
    model.set_attn_implementation(name)
    try:
        yield
    finally:
        model.set_attn_implementation(before)


class SplitCacheLayer(DynamicLayer):
    """One layer's cache in two given parts: attention reads `past ++ recent ++ new` (one Concat
    in the graph), and `present` is `recent ++ new`, the only cache tensor the graph returns."""

    def __init__(self, past: tuple[torch.Tensor, torch.Tensor], recent: tuple[torch.Tensor, torch.Tensor]) -> None:
        super().__init__()
        self.past, self.recent = past, recent
        self.keys, self.values = past
        self.is_initialized = True
        self.present: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        (past_k, past_v), (recent_k, recent_v) = self.past, self.recent
        self.present = (torch.cat([recent_k, key_states], dim=-2), torch.cat([recent_v, value_states], dim=-2))
        self.keys = torch.cat([past_k, recent_k, key_states], dim=-2)
        self.values = torch.cat([past_v, recent_v, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        """Cached columns (both parts); traced as Shape arithmetic, so it stays dynamic."""
        return self.past[0].shape[-2] + self.recent[0].shape[-2]


class GeneratorLM(torch.nn.Module):
    """Flat-tensor facade over a HF causal LM: (ids, mask, positions, *past, *recent) → (last
    logits, *present), the interface above. Every layer's cache is whole, a sliding-window
    layer's too: its window is in the attention mask, built from the cache positions."""

    def __init__(self, model: PreTrainedModel) -> None:
        super().__init__()
        self.model = model
        self.num_layers = int(model.config.num_hidden_layers)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, *cache: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        n = 2 * self.num_layers
        past, recent = cache[:n], cache[n:]
        layers = [
            SplitCacheLayer((past[2 * i], past[2 * i + 1]), (recent[2 * i], recent[2 * i + 1]))
            for i in range(self.num_layers)
        ]
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=Cache(layers=[*layers]),
            use_cache=True,
            logits_to_keep=1,
        )
        present: list[torch.Tensor] = []
        for layer in layers:
            assert layer.present is not None, "a layer's cache was never updated"
            present += layer.present
        return (out.logits, *present)


def cache_names(num_layers: int, prefix: str) -> list[str]:
    """`<prefix>.{i}.key`, `<prefix>.{i}.value` for every layer, in the graph's order."""
    return [f"{prefix}.{i}.{kv}" for i in range(num_layers) for kv in ("key", "value")]


def io_names(num_layers: int) -> tuple[list[str], list[str]]:
    """(input names, output names) of the exported graph."""
    inputs = ["input_ids", "attention_mask", "position_ids"]
    inputs += cache_names(num_layers, "past_key_values") + cache_names(num_layers, "recent")
    return inputs, ["logits", *cache_names(num_layers, "present")]


def kv_shape(model: PreTrainedModel) -> tuple[int, int]:
    """(kv heads, head dim) of the model's cache tensors."""
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return int(cfg.num_key_value_heads), int(head_dim)


def export_onnx(model: PreTrainedModel, path: Path, opset: int = 17) -> None:
    """Trace `model` (fp32, grouped attention) into `path` with dynamic batch/sequence/cache axes,
    on the device the model is on (the graph is the same; `npm run gpu-check` traces on CUDA)."""
    wrapper = GeneratorLM(model.eval())
    heads, head_dim = kv_shape(model)
    inputs, outputs = io_names(wrapper.num_layers)
    past_len, recent_len, seq = 3, 2, 4  # dummy sizes; every axis below is dynamic
    total = past_len + recent_len + seq
    device = next(model.parameters()).device
    dummy = tuple(
        t.to(device)
        for t in (
            torch.ones(1, seq, dtype=torch.long),
            torch.ones(1, total, dtype=torch.long),
            torch.arange(total - seq, total).unsqueeze(0),
            *[torch.zeros(1, heads, past_len, head_dim) for _ in range(2 * wrapper.num_layers)],
            *[torch.zeros(1, heads, recent_len, head_dim) for _ in range(2 * wrapper.num_layers)],
        )
    )
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "total_sequence"},
        "position_ids": {0: "batch", 1: "sequence"},
        "logits": {0: "batch"},
    }
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in inputs if n.startswith("past_key_values.")})
    axes.update({n: {0: "batch", 2: "recent_sequence"} for n in inputs if n.startswith("recent.")})
    axes.update({n: {0: "batch", 2: "present_sequence"} for n in outputs[1:]})
    # The TorchScript tracer warns about constants and Python booleans inside transformers' cache
    # and mask code, and about advanced indexing; the parity check after the export is what tells
    # whether the graph is right, so these exact warnings are silenced (docs/spa-models.md#export).
    with torch.no_grad(), warnings.catch_warnings(), attention_implementation(model, GROUPED):
        # torch exports the class from torch.jit without listing it in __all__
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # pyright: ignore[reportPrivateImportUsage]
        warnings.filterwarnings("ignore", message="Exporting aten::index operator of advanced indexing")
        torch.onnx.export(
            wrapper,
            dummy,
            str(path),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,  # TorchScript exporter
        )
