"""Export a policy to ONNX with KV-cache inputs/outputs, check it against PyTorch, version it.

Graph interface (what the TS generator feeds, batch-first, fp32):
  inputs   input_ids [b, s] int64, attention_mask [b, past+s] int64, position_ids [b, s] int64,
           past_key_values.{i}.key / .value [b, kv_heads, past, head_dim] (past may be 0)
  outputs  logits [b, s, vocab], present.{i}.key / .value [b, kv_heads, past+s, head_dim]
Decoding: call once with the prompt and empty pasts, then once per token feeding `present.*`
back as `past_key_values.*`.

Every layer's cache is whole, a sliding-window layer's too (`tiny-local`): its window is in the
attention mask, built from the cache positions, so the interface is the same for every model.

Artifact folder `<root>/v<version>/`: model.onnx, the tokenizer files, config.json and
manifest.json (version, stage, step, model, sha256 of model.onnx, parity diffs; for a model with
sliding-window layers also the parity past the window, docs/spa-models.md#local). Written to a
temporary folder and renamed, so a reader never sees half an artifact.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModelForCausalLM, DynamicCache, PreTrainedModel

from .cli_errors import VERSION_MAX, exit_code, int_arg
from .models import load_tokenizer, resolve_model_dir

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "config.json",
    "generation_config.json",
)


class KvCacheLM(torch.nn.Module):
    """Flat-tensor facade over a HF causal LM: (ids, mask, positions, *past) → (logits, *present).

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


def io_names(num_layers: int) -> tuple[list[str], list[str]]:
    """(input names, output names) of the exported graph."""
    past = [f"past_key_values.{i}.{kv}" for i in range(num_layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(num_layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids", *past], ["logits", *present]


def kv_shape(model: PreTrainedModel) -> tuple[int, int]:
    """(kv heads, head dim) of the model's cache tensors."""
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return int(cfg.num_key_value_heads), int(head_dim)


def export_onnx(model: PreTrainedModel, path: Path, opset: int = 17) -> None:
    """Trace `model` (eager attention, fp32) into `path` with dynamic batch/sequence/past axes."""
    wrapper = KvCacheLM(model.eval())
    heads, head_dim = kv_shape(model)
    inputs, outputs = io_names(wrapper.num_layers)
    past_len, seq = 3, 4  # dummy sizes; every axis below is dynamic
    dummy = (
        torch.ones(1, seq, dtype=torch.long),
        torch.ones(1, past_len + seq, dtype=torch.long),
        torch.arange(past_len, past_len + seq).unsqueeze(0),
        *[torch.zeros(1, heads, past_len, head_dim) for _ in range(2 * wrapper.num_layers)],
    )
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "total_sequence"},
        "position_ids": {0: "batch", 1: "sequence"},
        "logits": {0: "batch", 1: "sequence"},
    }
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in inputs[3:]})
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in outputs[1:]})
    # The TorchScript tracer warns about constants and Python booleans inside transformers' cache
    # and mask code, and about advanced indexing; the parity check after the export is what tells
    # whether the graph is right, so these exact warnings are silenced (docs/spa-models.md#export).
    with torch.no_grad(), warnings.catch_warnings():
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


@dataclass(frozen=True)
class Parity:
    """Max |onnxruntime − PyTorch| over logits (and present KV) for a prompt."""

    no_cache: float
    with_cache: float


def compare_chunks(
    model: PreTrainedModel, session: ort.InferenceSession, input_ids: list[int], chunks: list[int]
) -> list[float]:
    """Feed `input_ids` in `chunks` (token counts, summing to its length) through the cache, to
    onnxruntime and to PyTorch (`KvCacheLM`, so with the same full cache); the max |difference|
    over logits and present KV of each call. Both sides continue from onnxruntime's present."""
    if sum(chunks) != len(input_ids) or min(chunks) < 1:
        raise ValueError(f"chunks {chunks} do not split {len(input_ids)} tokens")
    wrapper = KvCacheLM(model.eval())
    heads, head_dim = kv_shape(model)
    names, _ = io_names(wrapper.num_layers)
    past = [torch.zeros(1, heads, 0, head_dim) for _ in range(2 * wrapper.num_layers)]
    diffs: list[float] = []
    start = 0
    for size in chunks:
        ids = input_ids[start : start + size]
        feeds = (
            torch.tensor([ids]),
            torch.ones(1, start + size, dtype=torch.long),
            torch.arange(start, start + size).unsqueeze(0),
            *past,
        )
        with torch.no_grad():
            ref = wrapper(*feeds)
        got = session.run(None, {n: t.numpy() for n, t in zip(names, feeds)})
        diffs.append(max(float(np.abs(g - r.numpy()).max()) for g, r in zip(got, ref)))
        past = [torch.from_numpy(np.asarray(g)) for g in got[1:]]
        start += size
    return diffs


def check_parity(model: PreTrainedModel, onnx_path: Path, input_ids: list[int], split: int | None = None) -> Parity:
    """Run the prompt whole with empty pasts, and as prefix + continuation through the cache."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    cut = split if split is not None else max(1, len(input_ids) // 2)
    (whole,) = compare_chunks(model, session, input_ids, [len(input_ids)])
    with_cache = compare_chunks(model, session, input_ids, [n for n in (cut, len(input_ids) - cut) if n])
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

    `prompt`: max |onnxruntime − PyTorch| on a prompt of `tokens` > window, whole with empty pasts.
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
    ids = torch.tensor([input_ids])
    n = len(input_ids)
    causal = torch.full((n, n), torch.finfo(torch.float32).min).triu(1)[None, None]
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
) -> Path:
    """Export `model_dir` to `root/v<version>/` (atomic), check parity, write manifest.json."""
    if stage not in ("init", "sft", "ppo"):
        raise ValueError(f"stage {stage!r}: expected init, sft or ppo")
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, use_safetensors=True, dtype=torch.float32, attn_implementation="eager"
    )
    tokenizer = load_tokenizer(model_dir)
    root.mkdir(parents=True, exist_ok=True)
    version = version if version is not None else next_version(root)
    final = root / f"v{version:06d}"
    if final.exists():
        raise FileExistsError(f"artifact {final} already exists (versions are immutable)")
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        export_onnx(model, tmp / "model.onnx")
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
        inputs, outputs = io_names(int(model.config.num_hidden_layers))
        manifest = {
            "version": version,
            "stage": stage,
            "step": step,
            "model": model_name,
            "format": "onnx",
            "sha256": sha256_file(tmp / "model.onnx"),
            "file": "model.onnx",
            "created_at": int(time.time() * 1000),
            "num_layers": int(model.config.num_hidden_layers),
            "num_key_value_heads": heads,
            "head_dim": head_dim,
            "vocab_size": int(model.config.vocab_size),
            "eos_token_id": tokenizer.eos_token_id,
            "inputs": inputs,
            "outputs": outputs,
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
        from .policy_publish import policy_update_from_manifest, publish_policy_update

        record = policy_update_from_manifest(artifact)
        publish_policy_update(record, topic=a.publish, brokers=a.brokers)
        print(f"[export] published version {record['version']} to {a.publish}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
