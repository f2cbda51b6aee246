"""The SFT step's speed-ups train what the plain step trained: the same losses, gradients and weights.

`full_logits_row_losses` is `sft.row_losses` as it was before it computed the LM head at target
positions only (full-vocabulary logits at every position, the model's own loss for one row). The
two differ by float rounding alone: the LM head's matmul runs over fewer rows and one row's mean
is a sum over a count instead of torch's `mean`. The bounds: losses and gradients at rel 1e-5
(single precision carries ~7 digits; measured differences are below 1e-6), trained weights at
rtol 1e-4 / atol 1e-5 as `test_sft.test_micro_batches_train_the_same_losses_and_weights` (AdamW
divides by the root of the second moment, so a rounding difference in a near-zero gradient can
become a relative difference in its update).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.models.load import load_policy
from spa_trainer.sft import train as sft
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.masking import Example
from spa_trainer.sft.train import Encoded, make_encoder, row_losses, run_sft
from spa_trainer.training.checkpoint import latest_checkpoint

from .synthetic import sokoban_rows, write_jsonl

RowLosses = Callable[[torch.nn.Module, list[Example], torch.device], torch.Tensor]


def full_logits_row_losses(model: torch.nn.Module, examples: list[Example], device: torch.device) -> torch.Tensor:
    """The step's per-row losses before this change: logits over the whole vocabulary at every position."""
    if len(examples) == 1:
        [ex] = examples
        out = model(
            input_ids=torch.tensor([ex.input_ids], device=device), labels=torch.tensor([ex.labels], device=device)
        )
        return out.loss.reshape(1)
    width = max(len(ex.input_ids) for ex in examples)
    ids = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for i, ex in enumerate(examples):
        ids[i, : len(ex.input_ids)] = torch.tensor(ex.input_ids)
        labels[i, : len(ex.labels)] = torch.tensor(ex.labels)
        attention[i, : len(ex.input_ids)] = 1
    ids, labels, attention = ids.to(device), labels.to(device), attention.to(device)
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    targets = labels[:, 1:]
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100, reduction="none"
    ).view(targets.shape)
    return nll.sum(dim=1) / (targets != -100).sum(dim=1)


def _row_losses_of_examples(model: torch.nn.Module, examples: list[Example], device: torch.device) -> torch.Tensor:
    return row_losses(model, [Encoded.of(ex) for ex in examples], device)


def _example(encoded: Encoded) -> Example:
    return Example(encoded.input_ids.tolist(), encoded.labels.tolist())


def _examples(count: int, max_length: int = 2048) -> list[Example]:
    """Encoded synthetic Sokoban rows: 562-574 tokens (different lengths, so padded in a
    micro-batch), or all cut on the left to a short window."""
    _model, tokenizer, _ = load_policy("tiny", torch.device("cpu"))
    encode = make_encoder(SftConfig(max_length=max_length), tokenizer)
    return [encode(SftRow.from_dict(r)) for r in sokoban_rows(count)]


def _losses_and_grads(
    losses_of: RowLosses, examples: list[Example], micro: int
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model, _tokenizer, _ = load_policy("tiny", torch.device("cpu"))
    chunks = [losses_of(model, examples[i : i + micro], torch.device("cpu")) for i in range(0, len(examples), micro)]
    losses = torch.cat(chunks)
    losses.sum().backward()
    return losses.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("micro", [1, 3])
@pytest.mark.parametrize("window", [2048, 160])
def test_target_position_logits_give_the_full_logits_losses_and_gradients(micro: int, window: int) -> None:
    examples = _examples(6, window)
    lengths = {len(ex.input_ids) for ex in examples}
    assert len(lengths) > 1 if window == 2048 else lengths == {window}
    before, grads_before = _losses_and_grads(full_logits_row_losses, examples, micro)
    after, grads_after = _losses_and_grads(_row_losses_of_examples, examples, micro)
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-6)
    assert len(grads_after) == len(grads_before)
    for a, b in zip(grads_after, grads_before):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_target_position_logits_train_the_same_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole run (10 rows, 2 epochs, micro-batches of 1 and 3) with the step as it is and with
    the full-logits step: the same per-step losses and final weights."""
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(10))
    runs: dict[str, list[float]] = {}
    weights: dict[str, dict[str, torch.Tensor]] = {}

    def full_logits(model: torch.nn.Module, examples: list[Encoded], device: torch.device) -> torch.Tensor:
        return full_logits_row_losses(model, [_example(e) for e in examples], device)

    for name, losses_of in (("before", full_logits), ("after", row_losses)):
        monkeypatch.setattr(sft, "row_losses", losses_of)
        for micro in (1, 3):
            key = f"{name}{micro}"
            cfg = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / key), epochs=2, batch_size=4, eval_rows=0)
            runs[key] = []
            run_sft(replace(cfg, micro_batch_size=micro, lr=3e-3), on_step=lambda _s, _r, x, k=key: runs[k].append(x))
            folder = latest_checkpoint(Path(cfg.out))
            assert folder is not None
            weights[key] = load_file(str(folder / "model" / "model.safetensors"))
    for micro in (1, 3):
        before, after = f"before{micro}", f"after{micro}"
        assert len(runs[after]) == len(runs[before]) >= 4
        assert runs[after] == pytest.approx(runs[before], rel=1e-5)
        for name, tensor in weights[before].items():
            torch.testing.assert_close(weights[after][name], tensor, rtol=1e-4, atol=1e-5)


def test_rows_are_encoded_once_when_the_run_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3 epochs over 10 rows call the encoder once per row, all before the first step."""
    encoded: list[int] = []
    steps: list[int] = []
    make = sft.make_rows_encoder

    def counting_encoder(
        cfg: SftConfig, tokenizer: PreTrainedTokenizerBase
    ) -> Callable[[Sequence[SftRow]], list[Example]]:
        encode = make(cfg, tokenizer)
        return lambda rows: (encoded.extend([len(steps)] * len(rows)), encode(rows))[1]

    monkeypatch.setattr(sft, "make_rows_encoder", counting_encoder)
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(10))
    cfg = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=3, batch_size=4, val_fraction=0.0)
    run_sft(replace(cfg, eval_rows=0), on_step=lambda s, _r, _l: steps.append(s))
    assert len(steps) == 9
    assert encoded == [0] * 10
