"""ONNX export with KV cache: parity with PyTorch, artifact layout, greedy decoding through the cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from spa_trainer.export import check_parity, export_policy, io_names, next_version, sha256_file
from spa_trainer.models import generate

from .onnx_batch import dense, left_padded_logits_error


@pytest.fixture(scope="module")
def artifact(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_policy(tiny_dir, tmp_path_factory.mktemp("artifacts"), stage="sft", step=7, model_name="tiny")


def test_manifest_and_files(artifact: Path) -> None:
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert artifact.name == "v000001"
    assert manifest["version"] == 1 and manifest["stage"] == "sft" and manifest["step"] == 7
    assert manifest["sha256"] == sha256_file(artifact / "model.onnx")
    assert (artifact / "tokenizer.json").is_file() and (artifact / "config.json").is_file()
    assert next_version(artifact.parent) == 2
    parity = manifest["parity_max_abs_diff"]
    assert parity["no_cache"] < 1e-4 and parity["with_cache"] < 1e-4


def test_graph_names(artifact: Path, tiny_dir: Path) -> None:
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    layers = AutoModelForCausalLM.from_pretrained(tiny_dir).config.num_hidden_layers
    inputs, outputs = io_names(layers)
    assert [i.name for i in session.get_inputs()] == inputs
    assert [o.name for o in session.get_outputs()] == outputs
    assert "past_key_values.0.key" in inputs and "present.1.value" in outputs


def test_parity_on_a_chat_prompt(artifact: Path, tiny_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, attn_implementation="eager")
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "State:\n#√P_#"}], add_generation_prompt=True, tokenize=False
    )
    ids = tok(text + "<think>", add_special_tokens=False)["input_ids"]
    parity = check_parity(model, artifact / "model.onnx", ids, split=len(ids) - 1)
    assert parity.no_cache < 1e-4 and parity.with_cache < 1e-4


def test_incremental_greedy_matches_pytorch_generate(artifact: Path, tiny_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    manifest = json.loads((artifact / "manifest.json").read_text())
    prompt = [1, 40, 41, 42, 43]
    with torch.no_grad():
        ref = generate(
            model, torch.tensor([prompt]), max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0
        )[0, len(prompt) :].tolist()
    past = {
        n: np.zeros((1, manifest["num_key_value_heads"], 0, manifest["head_dim"]), np.float32)
        for n in manifest["inputs"][3:]
    }
    ids, got = prompt, []
    for _ in range(8):
        start = next(iter(past.values())).shape[2]
        feeds = {
            "input_ids": np.array([ids], np.int64),
            "attention_mask": np.ones((1, start + len(ids)), np.int64),
            "position_ids": np.arange(start, start + len(ids), dtype=np.int64)[None],
            **past,
        }
        out = dense(session.run(None, feeds))
        token = int(out[0][0, -1].argmax())
        got.append(token)
        past = {n.replace("present", "past_key_values"): v for n, v in zip(manifest["outputs"][1:], out[1:])}
        ids = [token]
    assert got == ref


def test_left_padded_batch(artifact: Path, tiny_dir: Path) -> None:
    """Two prompts of different length in one batch, the shorter left-padded (mask 0)."""
    ids = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert left_padded_logits_error(tiny_dir, artifact, ids, mask) < 1e-4


def test_cli_exports_the_initial_policy_as_v0(tiny_dir: Path, tmp_path: Path) -> None:
    """`spa run --generator self-play` exports the untrained model as v0; the next export is v1."""
    from spa_trainer.export import main

    assert main(["--model", str(tiny_dir), "--out", str(tmp_path), "--stage", "init", "--version", "0"]) == 0
    manifest = json.loads((tmp_path / "v000000" / "manifest.json").read_text())
    assert manifest["version"] == 0 and manifest["stage"] == "init"
    assert next_version(tmp_path) == 1


def test_cli_errors_are_one_line(tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spa_trainer.export import main

    assert main(["--model", str(tmp_path / "nothing"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("[export] error: --model") and "\n" not in err


def test_export_raises_no_tracer_warnings(tiny_dir: Path, tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_policy(tiny_dir, tmp_path, stage="sft", step=1, model_name="tiny")
    # torch exports the class from torch.jit without listing it in __all__
    tracer_warning = torch.jit.TracerWarning  # pyright: ignore[reportPrivateImportUsage]
    noisy = [w for w in caught if issubclass(w.category, tracer_warning) or "aten::index" in str(w.message)]
    assert noisy == [], [str(w.message)[:120] for w in noisy]
