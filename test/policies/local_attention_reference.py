"""Python side of test/policies/onnx-local-attention.slow.test.ts (run with trainer/.venv's python).

  build DIR                  the `tiny-local` model with its matrices redrawn at std 0.16 (seed 1, as
                             the ONNX test policy of bench/python/generate_reference.py, so greedy text
                             varies) in DIR/model, exported by spa_trainer.export to DIR/local/v000001;
                             the same weights with every layer global to DIR/global/v000001
  greedy MODEL_DIR N         {prompts} on stdin: PyTorch greedy `generate` (its own window-trimmed
                             cache), N new tokens per prompt, one prompt at a time

Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from spa_trainer.export import export_policy
from spa_trainer.models.tiny import TINY_MODELS, tiny_model_dir


def build(out: Path) -> dict[str, object]:
    source = tiny_model_dir(TINY_MODELS["tiny-local"])
    model = AutoModelForCausalLM.from_pretrained(source, use_safetensors=True, dtype=torch.float32)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():  # tied embeddings appear once
            if param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.16)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model.save_pretrained(out / "model", safe_serialization=True)
    tokenizer.save_pretrained(out / "model")
    local = export_policy(out / "model", out / "local", stage="init", step=0, model_name="tiny-local", version=1)
    config = model.config
    config.use_sliding_window, config.sliding_window = False, None
    config.layer_types = ["full_attention"] * int(config.num_hidden_layers)
    model.save_pretrained(out / "model-global", safe_serialization=True)
    tokenizer.save_pretrained(out / "model-global")
    glob = export_policy(out / "model-global", out / "global", stage="init", step=0, model_name="global", version=1)
    return {"model_dir": str(out / "model"), "local": str(local), "global": str(glob)}


def greedy(model_dir: str, new_tokens: int, prompts: list[str]) -> dict[str, object]:
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, use_safetensors=True, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    out: list[list[int]] = []
    lengths: list[int] = []
    for prompt in prompts:
        ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            seq = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                max_new_tokens=new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
        out.append(seq[0, ids.shape[1] :].tolist())
        lengths.append(ids.shape[1])
    return {"tokens": out, "prompt_tokens": lengths}


def main(argv: list[str]) -> None:
    if argv[0] == "build":
        result = build(Path(argv[1]))
    else:
        result = greedy(argv[1], int(argv[2]), json.load(sys.stdin)["prompts"])
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
