"""Export a policy to ONNX in the generator's graph (graph.py), check it, version it.

`python -m spa_trainer.export --model <tiny|folder> --out <root> [--stage sft --step N --publish TOPIC]`.

Artifact folder `<root>/v<version>/`: model.onnx, the tokenizer files, config.json and
manifest.json (version, stage, step, model, sha256 of model.onnx, the graph's inputs, outputs and
structure, parity diffs; for a model with sliding-window layers also the parity past the window,
docs/spa-models.md#local). Written to a temporary folder and renamed, so a reader never sees half
an artifact; an export whose graph lacks the structure (structure.py) or misses the parity
tolerance is not written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import onnx
import torch
from transformers import AutoModelForCausalLM

from ..cli.errors import VERSION_MAX, exit_code, int_arg
from ..models.load import load_tokenizer, resolve_model_dir
from ..progress import heartbeat
from .graph import export_onnx, io_names, kv_shape
from .parity import check_parity, check_window_parity
from .structure import GRAPH, declare_last_position_logits, missing_structure

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "config.json",
    "generation_config.json",
)


def sha256_file(path: Path) -> str:
    """Lower-case hex SHA-256 of a file (streamed)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def next_version(root: Path) -> int:
    """One more than the highest `v<n>` folder under `root` (1 for an empty root)."""
    versions = [int(p.name[1:]) for p in root.glob("v*") if p.name[1:].isdigit()]
    return max(versions, default=0) + 1


def export_policy(
    model_dir: Path,
    root: Path,
    stage: str,
    step: int,
    model_name: str,
    version: int | None = None,
    parity_prompt: str = "<|im_start|>user\nTurn 1:\nState:\n#P_X#<|im_end|>\n",
    tolerance: float = 1e-3,
    device: torch.device | None = None,
) -> Path:
    """Export `model_dir` to `root/v<version>/` (atomic), check parity, write manifest.json; a line
    every 10 s says the export is still running (it takes seconds to minutes on a busy CPU). The
    model is traced and its parity reference run on `device` (default CPU), in fp32."""
    print(f"[export] exporting {model_name} ({stage} step {step}) to ONNX under {root}", flush=True)
    with heartbeat("export", f"{model_name} ({stage} step {step})"):
        return _export(model_dir, root, stage, step, model_name, version, parity_prompt, tolerance, device)


def _export(
    model_dir: Path,
    root: Path,
    stage: str,
    step: int,
    model_name: str,
    version: int | None,
    parity_prompt: str,
    tolerance: float,
    device: torch.device | None,
) -> Path:
    """export_policy's work."""
    if stage not in ("init", "sft", "ppo"):
        raise ValueError(f"stage {stage!r}: expected init, sft or ppo")
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, use_safetensors=True, dtype=torch.float32, attn_implementation="eager"
    )
    torch.nn.Module.to(model, device or torch.device("cpu"))  # transformers' decorated `.to` confuses type checkers
    tokenizer = load_tokenizer(model_dir)
    root.mkdir(parents=True, exist_ok=True)
    version = version if version is not None else next_version(root)
    final = root / f"v{version:06d}"
    if final.exists():
        raise FileExistsError(f"artifact {final} already exists (versions are immutable)")
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        export_onnx(model, tmp / "model.onnx")
        declare_last_position_logits(tmp / "model.onnx")
        layers = int(model.config.num_hidden_layers)
        missing = missing_structure(onnx.load(str(tmp / "model.onnx")), layers)
        if missing:
            raise ValueError(f"the exported graph lacks {'; '.join(missing)}")
        ids = tokenizer(parity_prompt, add_special_tokens=False)["input_ids"]
        parity = check_parity(model, tmp / "model.onnx", ids)
        if max(parity.no_cache, parity.with_cache) > tolerance:
            raise ValueError(f"ONNX/PyTorch mismatch {parity} exceeds {tolerance}")
        window = check_window_parity(model, tmp / "model.onnx", ids)
        if window is not None and max(window.prompt, window.decode) > tolerance:
            raise ValueError(f"ONNX/PyTorch mismatch past the sliding window {window} exceeds {tolerance}")
        for name in TOKENIZER_FILES:
            if (model_dir / name).is_file():
                shutil.copy2(model_dir / name, tmp / name)
        heads, head_dim = kv_shape(model)
        inputs, outputs = io_names(layers)
        manifest = {
            "version": version,
            "stage": stage,
            "step": step,
            "model": model_name,
            "format": "onnx",
            "sha256": sha256_file(tmp / "model.onnx"),
            "file": "model.onnx",
            "created_at": int(time.time() * 1000),
            "num_layers": layers,
            "num_key_value_heads": heads,
            "head_dim": head_dim,
            "vocab_size": int(model.config.vocab_size),
            "eos_token_id": tokenizer.eos_token_id,
            "inputs": inputs,
            "outputs": outputs,
            "graph": list(GRAPH),
            "parity_max_abs_diff": {
                **asdict(parity),
                **({} if window is None else {"window_prompt": window.prompt, "window_decode": window.decode}),
            },
        }
        if window is not None:
            manifest["sliding_window"] = {
                "window": window.window,
                "layer_types": list(getattr(model.config, "layer_types", None) or []),
                "parity_tokens": window.tokens,
                "parity_chunks": list(window.chunks),
                "window_effect": window.window_effect,
            }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def main(argv: list[str]) -> int:
    """CLI: `python -m spa_trainer.export --model <tiny|folder> --out <root> --stage sft --step N [--publish]`.
    Boundary errors (no model, an existing version, a parity failure, no broker) print one line, exit 2."""
    return exit_code("export", lambda: run_export(argv))


def run_export(argv: list[str]) -> None:
    """Parse the flags, export, and publish when asked."""
    p = argparse.ArgumentParser(prog="python -m spa_trainer.export")
    p.add_argument("--model", required=True, help="'tiny', a HF folder, a trainer checkpoint or run folder")
    p.add_argument("--out", required=True, help="artifact root; the export goes to <out>/v<version>/")
    p.add_argument("--stage", default="sft", choices=["init", "sft", "ppo"])
    int_arg(p, "--step", 0, VERSION_MAX, default=0, help="the training step the weights are from")
    int_arg(
        p, "--version", 0, VERSION_MAX, default=None, help="artifact version (default: one past the newest under --out)"
    )
    p.add_argument("--name", default=None, help="model name for the manifest (default: the folder)")
    p.add_argument("--publish", default=None, metavar="TOPIC", help="publish a PolicyUpdate to this topic")
    p.add_argument("--brokers", default=None)
    a = p.parse_args(argv)
    folder = resolve_model_dir(a.model)
    artifact = export_policy(folder, Path(a.out), a.stage, a.step, a.name or a.model, version=a.version)
    print(f"[export] {artifact}: {(artifact / 'manifest.json').read_text()}")
    if a.publish:
        from ..topics.policy_updates import policy_update_from_manifest, publish_policy_update

        record = policy_update_from_manifest(artifact)
        publish_policy_update(record, topic=a.publish, brokers=a.brokers)
        print(f"[export] published version {record['version']} to {a.publish}")
