"""Shared checks of an exported ONNX policy against PyTorch (test helpers)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModelForCausalLM


def dense(outputs: Sequence[object]) -> list[np.ndarray]:
    """A session's outputs, which ONNX Runtime types as arrays, sparse tensors, lists or maps: this
    graph's are all arrays."""
    arrays = [o for o in outputs if isinstance(o, np.ndarray)]
    assert len(arrays) == len(outputs), [type(o) for o in outputs]
    return arrays


def left_padded_logits_error(model_dir: Path, artifact: Path, ids: torch.Tensor, mask: torch.Tensor) -> float:
    """Max |onnxruntime − PyTorch| of the logits at the real (mask 1) positions of a batch whose
    shorter rows are left-padded, run whole with empty pasts and positions counted from each
    row's first real token."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    manifest = json.loads((artifact / "manifest.json").read_text())
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.numpy()
    past = {
        n: np.zeros((ids.shape[0], manifest["num_key_value_heads"], 0, manifest["head_dim"]), np.float32)
        for n in manifest["inputs"][3:]
    }
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": positions.numpy(), **past}
    got = dense(session.run(["logits"], feeds))[0]
    real = mask.numpy().astype(bool)
    return float(np.abs(got[real] - ref[real]).max())
