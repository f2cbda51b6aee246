"""The export check: the exporter traces the model on the device and checks the written graph as it
always does (export/structure.py: split cache, last-position logits, grouped attention; export/parity.py:
onnxruntime against PyTorch, here PyTorch on the device, ≤ 1e-3, and past the sliding window for
`tiny-local`). The artifacts it writes are the ones the onnxruntime-node check decodes with.

`tiny-local` is exported with redrawn weights (`rescale_weights`, scale 8): its own init gives
near-uniform logits, whose greedy tokens two execution providers may break ties on differently. The
24.6 M model keeps its init: scaled, its logits outgrow the parity tolerance.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from ...export import export_policy
from ...models.tiny import rescale_weights
from .rows import Row, model_folder

RESCALED = {"tiny-local": 8.0}
"""Models exported with redrawn weights, by scale (the rest as built)."""


def artifact_dir(out: Path, model: str) -> Path:
    """Where the check writes `model`'s artifact (the TS side reads it from there)."""
    return out / model / "artifacts" / "v000001"


def exported_folder(model: str, out: Path) -> Path:
    """The HF folder to export: the model's own, or a copy with redrawn weights."""
    folder = model_folder(model)
    if model not in RESCALED:
        return folder
    target = out / model / "model"
    shutil.copytree(folder, target)
    weights = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, dtype=torch.float32)
    rescale_weights(weights, seed=1, scale=RESCALED[model])
    weights.save_pretrained(target, safe_serialization=True)
    return target


def export_row(model: str, device: str, out: Path) -> Row:
    """Export `model` on `device` into `artifact_dir(out, model)`; the exporter's own checks decide."""
    started = time.perf_counter()
    name = f"export {model}"
    try:
        folder = exported_folder(model, out)
        artifact = export_policy(
            folder, out / model / "artifacts", stage="init", step=0, model_name=model, version=1,
            device=torch.device(device),
        )  # fmt: skip
    except ValueError as error:  # the structure check or the parity tolerance refused the graph
        return Row(name, device, "fail", f"{time.perf_counter() - started:.0f} s", str(error))
    parity = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))["parity_max_abs_diff"]
    diffs = ", ".join(f"{k} {v:.1e}" for k, v in parity.items())
    figures = (
        f"graph structure ok; parity max |onnxruntime − torch| {diffs} (≤ 1e-3); {time.perf_counter() - started:.0f} s"
    )
    return Row(name, device, "pass", figures)  # the artifact sits in a folder removed at the end


def export_rows(device: str, models: list[str], out: Path) -> Iterator[Row]:
    """One export row per model."""
    for model in models:
        yield export_row(model, device, out)
