"""Python side of the ONNX-policy tests and the `generate` bench (run with trainer/.venv's python).

Subcommands (JSON in on stdin where noted, JSON out on stdout):
  fixture  --root DIR [--scale S] [--size tiny|25m]
                                      build (cached) the test policy: the trainer's tiny Qwen2 with
                                      re-randomised weights, exported by spa_trainer.export; `25m`
                                      is the bench's larger model (`sizes`, its own init)
  tokenize --artifact A  {prompts}    HF tokenizer ids of each prompt + decode round trip
  decode   --artifact A  {ids}        HF decode (skip_special_tokens, as vLLM) of each id list
  greedy   --model-dir M {prompts}    PyTorch greedy `generate` tokens, one prompt at a time
  bench    --artifact A --model-dir M {prompts}   tokens/s: transformers generate, onnxruntime loop
  floor    --inputs N --outputs M --model PATH   per-call cost of onnxruntime itself: writes a graph
                                      of M Identity nodes with N float inputs to PATH and times
                                      `session.run` on it (microseconds a call, median of rounds)
  serve    --artifact A                  onnxruntime loop timings on request, one JSON line each (paired
                                      alternation with onnxruntime-node in bench/generate.ts)

Why re-randomised weights: the tiny model's own init (std 0.02) gives near-uniform logits whose
greedy decode repeats one token forever, so "same greedy tokens" would test nothing. Std
0.02 × scale (default 8) gives input-dependent, varied greedy text and non-degenerate sampling.
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
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spa_trainer.models.tiny import TinySpec

REPO = Path(__file__).resolve().parents[2]
FIXTURE_FORMAT = 1  # bump to invalidate cached fixtures when this builder changes meaning


def sizes() -> dict[str, TinySpec]:
    """The fixture sizes: `tiny` (hidden 64, 2 layers, ~0.2 M parameters) and `25m`, the bench's
    larger model (spa_trainer.models.tiny.MODEL_25M, 24.6 M parameters)."""
    from spa_trainer.models.tiny import DEFAULT_SPEC, MODEL_25M

    return {"tiny": DEFAULT_SPEC, "25m": MODEL_25M}


SIZE_NAMES = ("tiny", "25m")


def fixture_key(scale: float, seed: int, size: str = "tiny") -> str:
    """Hash of the trainer sources and the settings (bump FIXTURE_FORMAT when the build changes)."""
    settings = f"{FIXTURE_FORMAT}:{scale}:{seed}" + ("" if size == "tiny" else f":{size}")
    h = hashlib.sha256(settings.encode())
    package = REPO / "trainer" / "spa_trainer"
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build_fixture(root: Path, scale: float, seed: int, size: str = "tiny") -> dict[str, str]:
    """`<root>/<key>/model` (HF folder) and `<root>/<key>/artifacts/v000001` (export), built once.
    A size other than `tiny` keeps its own initialisation (std 0.02): the re-randomisation is for
    the tests' greedy text, and a larger model's logits would outgrow the export's parity check."""
    final = root / fixture_key(scale, seed, size)
    result = {"model_dir": str(final / "model"), "artifact": str(final / "artifacts" / "v000001")}
    if (final / "artifacts" / "v000001" / "manifest.json").is_file():
        return result
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from spa_trainer.export import export_policy
    from spa_trainer.models.tiny import rescale_weights, tiny_model_dir

    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fixture-", dir=root))
    try:
        tiny = tiny_model_dir(sizes()[size])
        model = AutoModelForCausalLM.from_pretrained(tiny, use_safetensors=True, dtype=torch.float32)
        if size == "tiny":
            rescale_weights(model, seed, scale)
        model.save_pretrained(tmp / "model", safe_serialization=True)
        AutoTokenizer.from_pretrained(tiny).save_pretrained(tmp / "model")
        shutil.copy2(tiny / "generation_config.json", tmp / "model" / "generation_config.json")
        name = "tiny-test" if size == "tiny" else f"bench-{size}"
        export_policy(tmp / "model", tmp / "artifacts", stage="init", step=0, model_name=name, version=1)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "artifacts" / "v000001" / "manifest.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def tokenize(artifact: str, prompts: list[str]) -> dict[str, object]:
    """Ids of each prompt (no added specials) and whether decoding them gives the prompt back."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(artifact)
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    return {"ids": ids, "round_trip": [tok.decode(i) == p for i, p in zip(ids, prompts)]}


def decode(artifact: str, ids: list[list[int]]) -> dict[str, object]:
    """Texts of each id list with `skip_special_tokens=True` (vLLM's default)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(artifact)
    return {"texts": [tok.decode(i, skip_special_tokens=True) for i in ids]}


def load_model(model_dir: str):  # noqa: ANN201 - transformers type
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        model_dir, use_safetensors=True, dtype=torch.float32, attn_implementation="eager"
    ).eval()


def greedy(model_dir: str, artifact: str, prompts: list[str], max_new_tokens: int) -> dict[str, object]:
    """PyTorch greedy `generate` per prompt: generated ids up to and including an eos id."""
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(1)  # 2-core machines: a second thread mostly waits (and is 10× slower when busy)
    tok = AutoTokenizer.from_pretrained(artifact)
    model = load_model(model_dir)
    out: list[list[int]] = []
    for prompt in prompts:
        ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            seq = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id)
        out.append(seq[0, ids.shape[1]:].tolist())
    return {"tokens": out}


def left_pad(rows: list[list[int]], pad_id: int):  # noqa: ANN201 - numpy arrays
    """(input_ids, attention_mask, position_ids) int64 arrays of left-padded rows."""
    import numpy as np

    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    pos = np.ones((len(rows), width), dtype=np.int64)  # HF fills padded positions with 1
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = r
        mask[i, width - len(r):] = 1
        pos[i, width - len(r):] = np.arange(len(r))
    return ids, mask, pos


MIN_FOLD = 16  # policies/onnx/kv-cache.ts


def ort_greedy(session, manifest: dict, rows: list[list[int]], new_tokens: int) -> list[list[int]]:  # noqa: ANN001
    """The TS policy's loop in Python onnxruntime, on the same graph: prefill, then one token per
    step; the cache in two parts, `recent` (what the graph returns) folded into the settled part
    at √(2 × settled) columns, as policies/onnx/kv-cache.ts does."""
    import numpy as np

    ids, mask, pos = left_pad(rows, 0)
    b = len(rows)
    past_names = [n for n in manifest["inputs"] if n.startswith("past_key_values.")]
    recent_names = [n.replace("past_key_values.", "recent.") for n in past_names]
    empty = np.zeros((b, manifest["num_key_value_heads"], 0, manifest["head_dim"]), dtype=np.float32)
    past = [empty] * len(past_names)
    recent = [empty] * len(past_names)
    out: list[list[int]] = [[] for _ in rows]
    for _ in range(new_tokens):
        feeds = {"input_ids": ids, "attention_mask": mask, "position_ids": pos,
                 **dict(zip(past_names, past)), **dict(zip(recent_names, recent))}
        logits, *recent = session.run(None, feeds)
        settled = past[0].shape[2]
        if settled == 0:
            past, recent = recent, [empty] * len(past_names)
        elif recent[0].shape[2] ** 2 >= max(MIN_FOLD * MIN_FOLD, 2 * settled):
            past, recent = [np.concatenate([p, r], axis=2) for p, r in zip(past, recent)], [empty] * len(past_names)
        nxt = logits[:, -1, :].argmax(-1)
        for i, t in enumerate(nxt.tolist()):
            out[i].append(t)
        ids = nxt.astype(np.int64).reshape(b, 1)
        pos = pos[:, -1:] + 1
        mask = np.concatenate([mask, np.ones((b, 1), dtype=np.int64)], axis=1)
    return out


def timed(fn, repeats: int, warm_up=None) -> float:  # noqa: ANN001
    """Fastest wall seconds of `repeats` calls after one untimed warm-up (as bench/generate.ts)."""
    (warm_up or fn)()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def ort_session(artifact: str, threads: int):  # noqa: ANN201 - onnxruntime type
    """A CPU session on the artifact's model with the node policy's options (causal-lm.ts): `threads`
    intra-op threads (0 = onnxruntime's default), all graph optimisations, sequential execution."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(Path(artifact) / "model.onnx"), options, providers=["CPUExecutionProvider"])


def run_bench(artifact: str, model_dir: str, prompts: list[str], new_tokens: int, sizes: list[int],
              repeats: int, engines: str = "all", ort_threads: tuple[int, ...] = (1, 0)) -> dict[str, object]:
    """tokens/s of each engine (`ort`, `hf` or `all`) × batch size; greedy, exactly `new_tokens` per row."""
    import onnxruntime as ort
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(artifact)
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    manifest = json.loads((Path(artifact) / "manifest.json").read_text())
    results: list[dict[str, object]] = []
    for threads in ort_threads if engines in ("ort", "all") else ():
        session = ort_session(artifact, threads)
        for b in sizes:
            batch = rows[:b]
            seconds = timed(lambda: ort_greedy(session, manifest, batch, new_tokens), repeats)
            results.append({"engine": "python onnxruntime", "threads": threads or "default", "batch": b,
                            "seconds": seconds})
    model = load_model(model_dir)
    default_threads = torch.get_num_threads()
    for threads in sorted({1, default_threads}) if engines in ("hf", "all") else ():
        torch.set_num_threads(threads)
        for b in sizes:
            ids, mask, _ = left_pad(rows[:b], tok.pad_token_id)

            def hf(tokens: int = new_tokens) -> None:
                with torch.no_grad():
                    model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), do_sample=False,
                                   max_new_tokens=tokens, min_new_tokens=tokens, pad_token_id=tok.pad_token_id)

            # torch with 2 threads on a busy 2-core machine takes ~40 s a run: time it once
            seconds = timed(hf, repeats if threads == 1 else 1, warm_up=lambda: hf(8))
            results.append({"engine": "transformers generate", "batch": b, "seconds": seconds,
                            "threads": threads if threads == 1 else f"default ({threads})"})
    for r in results:
        r["tokens_per_s"] = int(r["batch"]) * new_tokens / float(r["seconds"])
    return {"new_tokens": new_tokens, "torch": torch.__version__, "onnxruntime": ort.__version__,
            "results": results}


def call_floor(inputs: int, outputs: int, model_path: str, calls: int = 2000, rounds: int = 15) -> dict[str, object]:
    """Median microseconds of one `session.run` on a graph that does no work: `outputs` Identity
    nodes over the first of `inputs` one-float inputs, session options as `ort_session` (1 thread).
    What is left is the per-call cost of the binding and the executor, which for the tiny policy
    (a few hundred µs a step) is a visible share of every decoding step."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    names = [f"in{i}" for i in range(inputs)]
    graph = helper.make_graph(
        [helper.make_node("Identity", [names[i % inputs]], [f"out{i}"]) for i in range(outputs)],
        "call_floor",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in names],
        [helper.make_tensor_value_info(f"out{i}", TensorProto.FLOAT, [1]) for i in range(outputs)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime this project runs
    onnx.save(model, model_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    feeds = {n: np.zeros(1, dtype=np.float32) for n in names}
    per_call: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            session.run(None, feeds)
        per_call.append((time.perf_counter() - start) * 1e6 / calls)
    return {"model": model_path, "python_us": sorted(per_call)[rounds // 2]}


def serve(artifact: str) -> None:
    """Line protocol for paired timing: a first line {"prompts": [...]}, then one line per run
    {"threads": t, "batch": b, "tokens": n} answered by {"seconds": s} (one call of
    the onnxruntime loop; sessions are opened once per thread count and reused)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(artifact)
    manifest = json.loads((Path(artifact) / "manifest.json").read_text())
    prompts = json.loads(sys.stdin.readline())["prompts"]
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    sessions: dict[int, object] = {}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        threads = int(request["threads"])
        session = sessions.setdefault(threads, ort_session(artifact, threads))
        batch = rows[: int(request["batch"])]
        start = time.perf_counter()
        ort_greedy(session, manifest, batch, int(request["tokens"]))
        print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="generate_reference.py")
    p.add_argument("command", choices=["fixture", "tokenize", "decode", "greedy", "bench", "serve", "floor"])
    p.add_argument("--root", default=str(REPO / ".cache" / "test-policy"))
    p.add_argument("--scale", type=float, default=8.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--size", default="tiny", choices=SIZE_NAMES)
    p.add_argument("--artifact")
    p.add_argument("--model-dir")
    p.add_argument("--max-new-tokens", type=int, default=400)
    p.add_argument("--batch-sizes", default="1,8")
    p.add_argument("--engines", default="all", choices=["ort", "hf", "all"])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--ort-threads", default="1,0", help="onnxruntime intra-op thread counts (0 = its default)")
    p.add_argument("--inputs", type=int, default=1)
    p.add_argument("--outputs", type=int, default=1)
    p.add_argument("--model", help="floor: where to write the no-work graph")
    a = p.parse_args(argv)
    if a.command == "serve":
        serve(a.artifact)
        return
    if a.command == "floor":
        json.dump(call_floor(a.inputs, a.outputs, a.model), sys.stdout)
        sys.stdout.write("\n")
        return
    if a.command == "fixture":
        result: dict[str, object] = build_fixture(Path(a.root), a.scale, a.seed, a.size)
    else:
        data = json.load(sys.stdin)
        if a.command == "tokenize":
            result = tokenize(a.artifact, data["prompts"])
        elif a.command == "decode":
            result = decode(a.artifact, data["ids"])
        elif a.command == "greedy":
            result = greedy(a.model_dir, a.artifact, data["prompts"], a.max_new_tokens)
        else:
            sizes = [int(s) for s in a.batch_sizes.split(",")]
            threads = tuple(int(t) for t in a.ort_threads.split(","))
            result = run_bench(a.artifact, a.model_dir, data["prompts"], a.max_new_tokens, sizes, a.repeats,
                               a.engines, threads)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
