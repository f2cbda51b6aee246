"""Load a policy: `tiny` or any local Hugging Face causal-LM folder (e.g. Qwen2.5-1.5B-Instruct).

Weights load from safetensors only (never pickled files, which can run code); nothing is fetched from a hub.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from ..training.checkpoint import latest_checkpoint
from .tiny import TINY_MODELS, tiny_model_dir


def pick_device() -> torch.device:
    """CUDA when present, CPU otherwise (tests run on CPU)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_model_dir(model: str) -> Path:
    """The HF folder `--model` names: a tiny model by name (`tiny`, `tiny-cells`: the cached folder,
    built on first use), a local
    HF folder, a trainer checkpoint (`<out>/checkpoints/step_<n>`, whose `model/` is used) or a
    trainer run folder (`<out>`: its `checkpoints/latest`), so one stage can start from another's."""
    if model in TINY_MODELS:
        return tiny_model_dir(TINY_MODELS[model])
    folder = Path(model)
    if not (folder / "config.json").is_file():
        latest = latest_checkpoint(folder) if (folder / "checkpoints").is_dir() else None
        if (folder / "model" / "config.json").is_file():
            folder = folder / "model"
        elif latest is not None:
            folder = latest / "model"
        else:
            raise FileNotFoundError(
                f"--model {model!r}: expected {' or '.join(map(repr, TINY_MODELS))}, a local Hugging Face folder with config.json "
                "(e.g. a downloaded Qwen/Qwen2.5-1.5B-Instruct), a trainer checkpoint "
                "(<out>/checkpoints/step_<n>) or a trainer run folder (<out>)"
            )
    if not any(folder.glob("*.safetensors")):
        raise FileNotFoundError(f"--model {model!r}: no *.safetensors weights (pickled .bin is not loaded)")
    return folder


def load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    """The folder's tokenizer; it must carry a chat template (SPA uses Qwen2.5's, docs/spa-prompts.md#conversation)."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if not tokenizer.chat_template:
        raise ValueError(f"tokenizer in {folder} has no chat_template (an -Instruct model is expected)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def pad_token_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The tokenizer's pad id (`load_tokenizer` sets pad = eos when a tokenizer has none)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if not isinstance(pad, int):
        raise TypeError(f"tokenizer has no single pad or eos token id (got {pad!r})")
    return pad


def load_policy(
    model: str, device: torch.device | None = None, attn_implementation: str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, Path]:
    """(model in fp32 on `device`, tokenizer, resolved folder). fp32 master weights; bf16 autocast
    is applied by the training loop on CUDA only (docs/spa-sft.md#settings)."""
    folder = resolve_model_dir(model)
    tokenizer = load_tokenizer(folder)
    kwargs: dict[str, object] = {"use_safetensors": True, "dtype": torch.float32}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    policy = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    # nn.Module.to moves in place. transformers overrides it under functools.wraps, which type
    # checkers do not bind to the instance; the call (the override) is nn.Module.to's, typed as such.
    cast(torch.nn.Module, policy).to(device or pick_device())
    return policy, tokenizer, folder


def generate(model: PreTrainedModel, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """`model.generate(input_ids, **kwargs)`: the prompt ids followed by the new ids, `(B, T + new)`.

    transformers 5 declares `generate` on GenerationMixin with `self` typed as a protocol that no
    model class satisfies (and PreTrainedModel does not declare it at all), and its result as
    `GenerateOutput | LongTensor`, which is the tensor unless `return_dict_in_generate` is set. The
    cast states what every causal LM `load_policy` or AutoModelForCausalLM returns provides."""
    generate_fn = cast(Callable[..., torch.Tensor], model.generate)
    return generate_fn(input_ids, **kwargs)
