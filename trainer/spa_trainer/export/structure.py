"""What makes an ONNX file the generator's graph (graph.py), read from the file itself.

The TS loader checks what it can see through onnxruntime-node (input and output names, the
declared logits shape) and `manifest.json`'s `graph` list; attention inside the graph is visible
only here, so the exporter refuses to write an artifact this check finds lacking, and
trainer/tests/test_export.py fails on a graph traced without the rewrites.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from .graph import cache_names

SPLIT_CACHE = "split_cache"
LAST_POSITION_LOGITS = "last_position_logits"
GROUPED_ATTENTION = "grouped_attention"
GRAPH = (SPLIT_CACHE, LAST_POSITION_LOGITS, GROUPED_ATTENTION)
"""manifest.json's `graph`: the structure every export has (policies/onnx/causal-lm.ts requires it)."""

COPIES = {"Expand", "Tile"}
"""Ops that copy a tensor to a larger one: on cache data, that is `repeat_kv`."""


def read_from(graph: onnx.GraphProto, sources: set[str]) -> set[str]:
    """Tensors whose values are computed from `sources` (nodes are in topological order, as ONNX
    requires). A `Shape` reads only a tensor's dimensions, so what follows it is not counted."""
    reached = set(sources)
    for node in graph.node:
        if node.op_type != "Shape" and reached.intersection(node.input):
            reached.update(node.output)
    return reached


def producer_inputs(graph: onnx.GraphProto, name: str) -> list[str]:
    """Inputs of the node that computes `name`, looking through Identity nodes."""
    producers = {o: n for n in graph.node for o in n.output}
    node = producers.get(name)
    while node is not None and node.op_type == "Identity":
        node = producers.get(node.input[0])
    return list(node.input) if node is not None else []


def missing_structure(model: onnx.ModelProto, num_layers: int) -> list[str]:
    """What the graph lacks of `GRAPH`, each with the reason; empty for the generator's graph."""
    graph = model.graph
    inputs = {i.name for i in graph.input}
    outputs = {o.name: o for o in graph.output}
    past, recent = cache_names(num_layers, "past_key_values"), cache_names(num_layers, "recent")
    present = cache_names(num_layers, "present")
    missing: list[str] = []
    lacking = [n for n in [*past, *recent] if n not in inputs] + [n for n in ["logits", *present] if n not in outputs]
    joins_past = [n for n in present if set(past).intersection(producer_inputs(graph, n))]
    if lacking or joins_past:
        why = (
            f"no {', '.join(sorted({n.split('.')[0] + '.*' for n in lacking}))}"
            if lacking
            else f"{', '.join(joins_past)} include past_key_values.*"
        )
        missing.append(f"{SPLIT_CACHE} ({why})")
    dims = outputs["logits"].type.tensor_type.shape.dim if "logits" in outputs else []
    if len(dims) != 3 or dims[1].dim_value != 1:
        missing.append(f"{LAST_POSITION_LOGITS} (logits is not declared [batch, 1, vocab])")
    from_cache = read_from(graph, set(past) | set(recent))
    copies = [n.name or n.op_type for n in graph.node if n.op_type in COPIES and from_cache.intersection(n.input)]
    if copies:
        missing.append(f"{GROUPED_ATTENTION} ({len(copies)} {'/'.join(sorted(COPIES))} nodes copy cache heads)")
    return missing


def declare_last_position_logits(path: Path) -> None:
    """Declares the traced logits `[batch, 1, vocab]`: the graph slices the last position before the
    LM head, but the TorchScript exporter names that axis as if it were dynamic."""
    model = onnx.load(str(path))
    (logits,) = [o for o in model.graph.output if o.name == "logits"]
    dims = logits.type.tensor_type.shape.dim
    dims[1].Clear()
    dims[1].dim_value = 1
    onnx.save(model, str(path))
