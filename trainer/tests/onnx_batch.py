"""Shared checks of an exported ONNX policy against PyTorch (test helpers)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModelForCausalLM

from spa_trainer.export.parity import OnnxCache


def onnx_greedy(artifact: Path, prompt: list[int], new_tokens: int) -> list[int]:
    """Greedy ids of the exported graph fed as the generator feeds it: the prompt, then one token
    a call, the cache kept in its two parts (settled and recent, folded every other call)."""
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    cache = OnnxCache.of_artifact(json.loads((artifact / "manifest.json").read_text()), batch=1)
    ids, got = prompt, []
    for _ in range(new_tokens):
        start = cache.whole[0].shape[2]
        logits, *_ = cache.run(
            session,
            np.array([ids], np.int64),
            np.ones((1, start + len(ids)), np.int64),
            np.arange(start, start + len(ids), dtype=np.int64)[None],
        )
        got.append(int(logits[0, -1].argmax()))
        ids = [got[-1]]
    return got


def left_padded_logits_error(model_dir: Path, artifact: Path, ids: torch.Tensor, mask: torch.Tensor) -> float:
    """Max |onnxruntime − PyTorch| of the logits at the real (mask 1) positions of a batch whose
    shorter rows are left-padded, positions counted from each row's first real token: the first
    column, then one column a call through the cache (the graph returns each call's last
    position), so every real position is compared."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.numpy()
    cache = OnnxCache.of(model, batch=ids.shape[0])
    worst = 0.0
    for end in range(1, ids.shape[1] + 1):
        start = cache.whole[0].shape[2]
        logits, *_ = cache.run(
            session, ids[:, start:end].numpy(), mask[:, :end].numpy(), positions[:, start:end].numpy()
        )
        real = mask[:, end - 1].numpy().astype(bool)
        worst = max(worst, float(np.abs(logits[real, 0] - ref[real, end - 1]).max()))
    return worst
