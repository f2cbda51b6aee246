"""ONNX export of a sliding-window model (`tiny-local`): the traced graph keeps the window.

The export traces a 7-token dummy, shorter than the 48-token window, so a mask baked from the
dummy's shapes would be plain causal; the parity check past the window (recorded in manifest.json)
is what tells, and it must be able to tell: a graph without the window fails it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from spa_trainer.export import (
    check_parity,
    check_window_parity,
    export_onnx,
    export_policy,
    window_parity_ids,
)
from spa_trainer.models.load import generate
from spa_trainer.models.tiny import TINY_MODELS, tiny_model_dir

from .onnx_batch import left_padded_logits_error, onnx_greedy
from .test_tiny_local import rescaled

WINDOW = 48


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny-local with its matrices redrawn at std 0.16 (varied greedy text), saved as a HF folder."""
    source = tiny_model_dir(TINY_MODELS["tiny-local"])
    folder = tmp_path_factory.mktemp("tiny-local")
    rescaled(source).save_pretrained(folder, safe_serialization=True)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def artifact(local_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_policy(
        local_model, tmp_path_factory.mktemp("artifacts"), stage="sft", step=1, model_name="tiny-local"
    )


def test_window_check_chunks_cross_the_window() -> None:
    ids, chunks = window_parity_ids([5, 6, 7], WINDOW, 1000)
    assert len(ids) == sum(chunks) == 2 * WINDOW + 8 and ids[:3] == [5, 6, 7]
    assert chunks == [40, 16, 44, 1, 1, 1, 1]  # under, across, beyond the window, then 4 decoding steps
    assert chunks[0] < WINDOW < chunks[0] + chunks[1] and sum(chunks[:3]) > WINDOW


def test_manifest_records_parity_past_the_window(artifact: Path) -> None:
    manifest = json.loads((artifact / "manifest.json").read_text())
    parity = manifest["parity_max_abs_diff"]
    assert set(parity) == {"no_cache", "with_cache", "window_prompt", "window_decode"}
    assert max(parity.values()) < 1e-4
    window = manifest["sliding_window"]
    assert window["window"] == WINDOW and window["layer_types"] == ["sliding_attention", "full_attention"]
    assert window["parity_tokens"] > WINDOW
    assert window["window_effect"] > 1e-2  # a graph without the window would fail the 1e-3 tolerance


def test_models_without_a_window_record_what_they_did(tiny_dir: Path, tmp_path: Path) -> None:
    manifest = json.loads((export_policy(tiny_dir, tmp_path, "sft", 0, "tiny") / "manifest.json").read_text())
    assert set(manifest["parity_max_abs_diff"]) == {"no_cache", "with_cache"} and "sliding_window" not in manifest


def test_a_graph_without_the_window_fails_the_check(local_model: Path, tmp_path: Path) -> None:
    """The same weights traced with every layer global: parity holds on a prompt within the window
    (the old check), and breaks past it."""
    local = AutoModelForCausalLM.from_pretrained(local_model, attn_implementation="eager").eval()
    cells = AutoModelForCausalLM.from_pretrained(
        tiny_model_dir(TINY_MODELS["tiny-cells"]), attn_implementation="eager"
    ).eval()
    cells.load_state_dict(local.state_dict())
    export_onnx(cells, tmp_path / "global.onnx")
    short = check_parity(local, tmp_path / "global.onnx", list(range(10, 40)))
    assert max(short.no_cache, short.with_cache) < 1e-4
    window = check_window_parity(local, tmp_path / "global.onnx", [10, 11, 12])
    assert window is not None and min(window.prompt, window.decode) > 1e-2


def test_onnx_greedy_past_the_window_matches_pytorch_generate(artifact: Path, local_model: Path) -> None:
    """A 150-token prompt, then 32 tokens one at a time through the full cache (every step's past
    beyond the window), against HF `generate` with its own window-trimmed cache."""
    model = AutoModelForCausalLM.from_pretrained(local_model, attn_implementation="eager").eval()
    prompt = torch.randint(3, int(model.config.vocab_size), (1, 150), generator=torch.Generator().manual_seed(3))
    new = 32
    with torch.no_grad():
        ref = generate(model, prompt, max_new_tokens=new, do_sample=False, eos_token_id=None, pad_token_id=0)
    got = onnx_greedy(artifact, prompt[0].tolist(), new)
    assert got == ref[0, prompt.shape[1] :].tolist()
    assert len(set(got)) > 3


def test_left_padded_batch_past_the_window(artifact: Path, local_model: Path) -> None:
    """Two rows of 90 and 70 tokens in one batch, the shorter left-padded: the window counts
    cache columns, as HF's mask does, and padding is masked inside it."""
    vocab = int(AutoConfig.from_pretrained(local_model).vocab_size)
    ids = torch.randint(3, vocab, (2, 90), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, :20] = 0
    ids[1, :20] = 0
    assert left_padded_logits_error(local_model, artifact, ids, mask) < 1e-4
