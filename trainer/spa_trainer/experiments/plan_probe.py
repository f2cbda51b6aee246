"""Does a policy read the board? The model's distribution over the four Sokoban actions as the first
word of the oracle's plan, against the oracle's first action (docs/ppo-check.md, eighth round).

For each demonstration row whose response starts `<think>Shortest plan: <action>` (the oracle's
base-mode turns, `spa run --warmup-modes base`), the prompt is rendered with the model's chat template,
`<think>Shortest plan:` appended, and the next-token probabilities of ` Up`, ` Down`, ` Left` and
` Right` read and renormalised over those four. A model that ignores the state gives the same
distribution on every board: entropy near ln 4 and one most likely action everywhere.

    python -m spa_trainer.plan_probe --model runs/bc3/bc3/warmup --rows rows.jsonl [--limit 400]

`--rows`: JSON Lines of SftRows, or of `spa tap <sft topic> --json` envelopes (their `record`).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..cli.errors import ROWS_MAX, TOKENS_MAX, int_arg
from ..data.sft_rows import SftRow
from ..models.load import load_policy
from ..sft.masking import faithful_texts

ACTIONS = ("Up", "Down", "Left", "Right")
PLAN = "Shortest plan:"
_FIRST = re.compile(r"^(?:<think>)?Shortest plan:\s*(Up|Down|Left|Right)\b")


@dataclass(frozen=True)
class PlanProbe:
    """`agreement`: share of rows whose most likely action is the oracle's first; `entropy`: mean
    entropy (nats) of the four-action distribution; `argmax` / `oracle`: counts by action."""

    rows: int
    agreement: float
    entropy: float
    argmax: dict[str, int]
    oracle: dict[str, int]


@torch.no_grad()
def probe(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: Sequence[SftRow], window: int) -> PlanProbe:
    """The probe over `rows` that carry a plan (others are skipped); prompts keep their rightmost
    `window` tokens, as in training."""
    ids = [tokenizer.encode(" " + a, add_special_tokens=False) for a in ACTIONS]
    if any(len(i) != 1 for i in ids):
        raise ValueError(f"the tokenizer splits an action: {dict(zip(ACTIONS, ids, strict=True))}")
    model.eval()
    agree, entropy, argmax, oracle = 0, 0.0, Counter[str](), Counter[str]()
    for row in rows:
        first = _FIRST.match(row.response)
        if first is None:
            continue
        prompt, _ = faithful_texts(tokenizer, row)  # ends with <think>
        tokens = tokenizer(prompt + PLAN, return_tensors="pt").input_ids[:, -window:].to(model.device)
        p = torch.softmax(model(tokens).logits[0, -1].float(), -1)[[i[0] for i in ids]]
        p = p / p.sum()
        best = ACTIONS[int(p.argmax())]
        agree += best == first.group(1)
        entropy += float(-(p * p.clamp_min(1e-12).log()).sum())
        argmax[best] += 1
        oracle[first.group(1)] += 1
    n = sum(oracle.values())
    if n == 0:
        raise ValueError(f"no row's response starts with '{PLAN} <action>' (base-mode oracle demonstrations)")
    return PlanProbe(n, agree / n, entropy / n, dict(argmax), dict(oracle))


def read_rows(path: str, limit: int) -> list[SftRow]:
    """SftRows from JSON Lines (bare, or `spa tap --json` envelopes), first-turn rows only, at most `limit`."""
    rows = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            row = SftRow.from_dict(raw.get("record", raw))
            if all(m.role != "assistant" for m in row.prompt) and len(rows) < limit:
                rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m spa_trainer.experiments.plan_probe", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--model", required=True, help="'tiny-cells', a HF folder or a trainer run folder")
    p.add_argument("--rows", required=True, help="JSON Lines of SftRows (or spa tap --json envelopes)")
    int_arg(p, "--limit", 1, ROWS_MAX, default=400, help="first-turn rows probed")
    int_arg(p, "--window", 1, TOKENS_MAX, default=512, help="prompt tokens kept (the SFT window)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    model, tokenizer, _ = load_policy(a.model)
    result = probe(model, tokenizer, read_rows(a.rows, a.limit), a.window)
    print(json.dumps({**asdict(result), "ln4": math.log(4)}))


if __name__ == "__main__":
    sys.exit(main())
