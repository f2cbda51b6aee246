"""Policy export: the generator's ONNX graph (graph.py), checked against PyTorch (parity.py) and
for its structure (structure.py), written as a versioned artifact (artifact.py)."""

from .artifact import export_policy, main, next_version, run_export, sha256_file
from .graph import GeneratorLM, export_onnx, io_names, kv_shape
from .parity import KvCacheLM, check_parity, check_window_parity, compare_chunks, sliding_window, window_parity_ids
from .structure import GRAPH, missing_structure

__all__ = [
    "GRAPH",
    "GeneratorLM",
    "KvCacheLM",
    "check_parity",
    "check_window_parity",
    "compare_chunks",
    "export_onnx",
    "export_policy",
    "io_names",
    "kv_shape",
    "main",
    "missing_structure",
    "next_version",
    "run_export",
    "sha256_file",
    "sliding_window",
    "window_parity_ids",
]
