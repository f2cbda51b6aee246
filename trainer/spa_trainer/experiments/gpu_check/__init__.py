"""`npm run gpu-check`'s Python side (docs/gpu.md): the trainer, export and torchrun checks, each run
on `--device cuda` (or `cpu`, the CPU equivalents the tests run), one JSON line per row.

    python -m spa_trainer.experiments.gpu_check probe
    python -m spa_trainer.experiments.gpu_check trainer|export|torchrun --device cuda --out DIR

`probe` says what torch sees (CUDA, GPUs, bf16); the TS side (cli/gpu-check/) runs the rest only when
the device is there, and runs the onnxruntime-node and `spa run` checks itself.
"""
