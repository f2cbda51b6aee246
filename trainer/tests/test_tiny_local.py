"""`tiny-local`: the tiny-cells model with layer 1 limited to a 48-token sliding window.

The spec and its config (what config.json says, what `from_pretrained` restores), the cache keys of
the models defined before the window existed, and, in PyTorch, that the window is applied: layer 1
ignores what lies 48 or more positions back, layer 2 does not, and decoding through the exporter's
full cache gives the logits of one whole forward pass and the tokens of HF `generate`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel

from spa_trainer.export import KvCacheLM, kv_shape, sliding_window
from spa_trainer.models.load import generate
from spa_trainer.models.tiny import TINY_MODELS, TinySpec, attention_config, spec_fields, tiny_model_dir

WINDOW = 48


@pytest.fixture(scope="module")
def local_dir() -> Path:
    return tiny_model_dir(TINY_MODELS["tiny-local"])


def rescaled(folder: Path, attn: str = "eager", seed: int = 1) -> PreTrainedModel:
    """The folder's model with its matrices redrawn at std 0.16 (as the ONNX test policy,
    bench/python/generate_reference.py): the init's near-uniform logits hide what attention reads."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation=attn).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.16)
    return model


def random_ids(model: PreTrainedModel, n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(3, int(model.config.vocab_size), (1, n), generator=torch.Generator().manual_seed(seed))


def test_models_defined_before_the_window_keep_their_cache_keys() -> None:
    """The cache key hashes `spec_fields`: without a window it is the spec's fields as they were
    before `sliding_window`/`sliding_layers` existed, so `tiny` and `tiny-cells` keep their folders."""
    before = {
        "tiny": "f39642be691acce884b8b460858ee93cb660957f4698117f2aa8e1852b5e0d22",
        "tiny-cells": "087b0be874578095a1a7bcf30419955b0c5b272251fbbb05d65d5ffcd40e0ffa",
    }
    for name, digest in before.items():
        fields = spec_fields(TINY_MODELS[name])
        assert "sliding_window" not in fields and "sliding_layers" not in fields
        assert hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest() == digest, name
    local = spec_fields(TINY_MODELS["tiny-local"])
    assert local == {**spec_fields(TINY_MODELS["tiny-cells"]), "sliding_window": WINDOW, "sliding_layers": 1}


def test_attention_config_only_for_a_window() -> None:
    assert attention_config(TinySpec()) == {}
    assert attention_config(TinySpec(sliding_window=48, num_hidden_layers=4, sliding_layers=2)) == {
        "use_sliding_window": True,
        "sliding_window": 48,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "full_attention"],
    }
    with pytest.raises(ValueError, match="out of range"):
        attention_config(TinySpec(sliding_window=48, sliding_layers=3))


def test_config_json_says_the_window_and_from_pretrained_restores_it(local_dir: Path, tiny_dir: Path) -> None:
    config = json.loads((local_dir / "config.json").read_text())
    assert config["use_sliding_window"] is True and config["sliding_window"] == WINDOW
    assert config["layer_types"] == ["sliding_attention", "full_attention"]
    spec = json.loads((local_dir / "tiny_spec.json").read_text())
    assert spec["sliding_window"] == WINDOW and spec["sliding_layers"] == 1
    model = AutoModelForCausalLM.from_pretrained(local_dir)
    assert model.config.sliding_window == WINDOW
    assert [layer.self_attn.sliding_window for layer in model.model.layers] == [WINDOW, None]
    assert sliding_window(model) == WINDOW
    plain = json.loads((tiny_dir / "config.json").read_text())  # no window: all global, as before
    assert plain["use_sliding_window"] is False and plain["sliding_window"] is None
    assert set(plain["layer_types"]) == {"full_attention"}
    assert sliding_window(AutoModelForCausalLM.from_pretrained(tiny_dir)) is None


def test_same_weights_as_tiny_cells(local_dir: Path) -> None:
    """The window changes the attention mask only: same seed, same initial weights."""
    cells = AutoModelForCausalLM.from_pretrained(tiny_model_dir(TINY_MODELS["tiny-cells"]))
    local = AutoModelForCausalLM.from_pretrained(local_dir)
    assert all(torch.equal(a, b) for a, b in zip(cells.state_dict().values(), local.state_dict().values()))
    assert TINY_MODELS["tiny-local"] == replace(TINY_MODELS["tiny-cells"], sliding_window=WINDOW)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_layer_one_ignores_tokens_beyond_the_window(local_dir: Path, attn: str) -> None:
    """Layer 1's output at the last position q reads positions q−47 … q: changing any earlier token
    leaves it bit for bit, changing q−47 does not. Layer 2 is global, so the logits change either way;
    the same weights without the window (tiny-cells) see the far token in layer 1 already."""
    model = rescaled(local_dir, attn)
    cells = rescaled(tiny_model_dir(TINY_MODELS["tiny-cells"]), attn)
    n = 120
    ids = random_ids(model, n)
    far = ids.clone()
    far[0, : n - WINDOW] = (far[0, : n - WINDOW] + 7) % int(model.config.vocab_size)  # every token out of reach
    edge = ids.clone()
    edge[0, n - WINDOW] = (edge[0, n - WINDOW] + 7) % int(model.config.vocab_size)  # the oldest token in reach

    def run(m: PreTrainedModel, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            out = m(input_ids=x, output_hidden_states=True)
        return out.hidden_states[1][0, -1], out.logits[0, -1]

    layer1, logits = run(model, ids)
    layer1_far, logits_far = run(model, far)
    layer1_edge, _ = run(model, edge)
    assert torch.equal(layer1, layer1_far)
    assert (layer1 - layer1_edge).abs().max() > 1e-3
    assert (logits - logits_far).abs().max() > 1e-3  # layer 2 reads the whole prompt
    cells_layer1, _ = run(cells, ids)
    cells_layer1_far, _ = run(cells, far)
    assert (cells_layer1 - cells_layer1_far).abs().max() > 1e-3


def test_eager_and_sdpa_agree(local_dir: Path) -> None:
    """SFT runs transformers' default attention (sdpa), the export eager: same window, same logits."""
    ids = random_ids(rescaled(local_dir), 130)
    with torch.no_grad():
        eager = rescaled(local_dir, "eager")(input_ids=ids).logits
        sdpa = rescaled(local_dir, "sdpa")(input_ids=ids).logits
    assert (eager - sdpa).abs().max() < 1e-4


def test_decoding_through_the_full_cache_matches_one_forward_pass(local_dir: Path) -> None:
    """KvCacheLM (the exported interface) keeps every layer's whole cache and builds the window
    from positions: a 60-token prefill and 12 single-token steps give the logits of one pass."""
    model = rescaled(local_dir)
    wrapper = KvCacheLM(model)
    ids = random_ids(model, 72)
    with torch.no_grad():
        whole = model(input_ids=ids).logits[0]
    heads, head_dim = kv_shape(model)
    past = [torch.zeros(1, heads, 0, head_dim) for _ in range(4)]
    start = 0
    for size in [60] + [1] * 12:
        with torch.no_grad():
            logits, *past = wrapper(
                ids[:, start : start + size],
                torch.ones(1, start + size, dtype=torch.long),
                torch.arange(start, start + size).unsqueeze(0),
                *past,
            )
        assert (logits[0] - whole[start : start + size]).abs().max() < 1e-4
        start += size
        assert past[0].shape[2] == start  # the sliding layer's cache is kept whole too


def test_greedy_through_the_full_cache_matches_generate(local_dir: Path) -> None:
    """HF `generate` trims the sliding layer's cache to the window (DynamicCache with the config);
    the exporter's full cache with the window in the mask gives the same 30 greedy tokens."""
    model = rescaled(local_dir)
    wrapper = KvCacheLM(model)
    prompt = random_ids(model, 100)
    with torch.no_grad():
        ref = generate(model, prompt, max_new_tokens=30, do_sample=False, eos_token_id=None, pad_token_id=0)
    ref_tokens = ref[0, prompt.shape[1] :].tolist()
    heads, head_dim = kv_shape(model)
    past = [torch.zeros(1, heads, 0, head_dim) for _ in range(4)]
    ids, got = prompt, []
    for _ in range(30):
        start = past[0].shape[2]
        with torch.no_grad():
            logits, *past = wrapper(
                ids,
                torch.ones(1, start + ids.shape[1], dtype=torch.long),
                torch.arange(start, start + ids.shape[1]).unsqueeze(0),
                *past,
            )
        got.append(int(logits[0, -1].argmax()))
        ids = torch.tensor([[got[-1]]])
    assert got == ref_tokens
    assert len(set(got)) > 3  # not one repeated token
