"""ONNX export with KV cache: parity with PyTorch, artifact layout, greedy decoding through the cache."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from spa_trainer.export import (
    KvCacheLM,
    check_parity,
    export_policy,
    graph,
    io_names,
    kv_shape,
    missing_structure,
    next_version,
    sha256_file,
)
from spa_trainer.export.parity import OnnxCache
from spa_trainer.models.load import generate

from .onnx_batch import left_padded_logits_error, onnx_greedy


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
    prompt = [1, 40, 41, 42, 43]
    with torch.no_grad():
        ref = generate(
            model, torch.tensor([prompt]), max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0
        )[0, len(prompt) :].tolist()
    assert onnx_greedy(artifact, prompt, 8) == ref


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


def test_the_export_is_the_generators_graph(artifact: Path, tiny_dir: Path) -> None:
    """Split cache, last-position logits, grouped attention: in the file, the manifest and a call."""
    layers = AutoModelForCausalLM.from_pretrained(tiny_dir).config.num_hidden_layers
    assert missing_structure(onnx.load(str(artifact / "model.onnx")), layers) == []
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["graph"] == ["split_cache", "last_position_logits", "grouped_attention"]
    session = ort.InferenceSession(str(artifact / "model.onnx"))
    logits = session.get_outputs()[0]
    assert logits.name == "logits" and logits.shape[1:] == [1, manifest["vocab_size"]]
    cache = OnnxCache.of_artifact(manifest, batch=1)
    # present = recent + new: 5, then 5 + 2 (folded into the settled part after the call), then 1
    for ids, past, present in (([5, 6, 7, 8, 9], 0, 5), ([10, 11], 5, 7), ([12], 7, 1)):
        out = cache.run(
            session,
            np.array([ids], np.int64),
            np.ones((1, past + len(ids)), np.int64),
            np.arange(past, past + len(ids))[None],
        )
        assert out[0].shape == (1, 1, manifest["vocab_size"])
        assert out[1].shape == (1, manifest["num_key_value_heads"], present, manifest["head_dim"])


def _trace_hf_interface(model: PreTrainedModel, path: Path) -> None:
    """HF's eager forward through a whole cache, every position's logits: the graph the exporter
    wrote before it made the generator's (TS rewrote it at load time)."""
    layers = int(model.config.num_hidden_layers)
    heads, head_dim = kv_shape(model)
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    dummy = (
        torch.ones(1, 4, dtype=torch.long),
        torch.ones(1, 7, dtype=torch.long),
        torch.arange(3, 7)[None],
        *[torch.zeros(1, heads, 3, head_dim) for _ in past],
    )
    axes = {n: {0: "b", 2: "p"} for n in [*past, *present]} | {"input_ids": {0: "b", 1: "s"}, "logits": {1: "s"}}
    axes |= {"attention_mask": {0: "b", 1: "t"}, "position_ids": {0: "b", 1: "s"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            KvCacheLM(model.eval()),
            dummy,
            str(path),
            input_names=["input_ids", "attention_mask", "position_ids", *past],
            output_names=["logits", *present],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def test_a_graph_as_hf_traces_it_lacks_every_part(tiny_dir: Path, tmp_path: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, attn_implementation="eager")
    _trace_hf_interface(model, tmp_path / "hf.onnx")
    missing = missing_structure(onnx.load(str(tmp_path / "hf.onnx")), int(model.config.num_hidden_layers))
    assert [m.split(" ")[0] for m in missing] == ["split_cache", "last_position_logits", "grouped_attention"]
    assert "no recent.*" in missing[0] and "Expand" in missing[2]


def test_an_export_without_grouped_attention_is_refused(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Traced with HF's eager attention (`repeat_kv`: one copy per layer for keys and one for
    values), the export stops before it writes an artifact."""
    monkeypatch.setattr(graph, "GROUPED", "eager")
    with pytest.raises(ValueError, match=r"lacks grouped_attention \(4 Expand/Tile nodes copy cache heads\)"):
        export_policy(tiny_dir, tmp_path, stage="sft", step=1, model_name="tiny")
    assert list(tmp_path.iterdir()) == []
