"""The PPO service's export schedule against the shared fixture (test/fixtures/ppo-export-schedule.json),
which the generator's schedule test (test/policies/staleness-schedule.test.ts) checks its trainer model
against: both sides agree on when versions are published and which version staleness is counted from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spa_trainer.data.avro import SCHEMA_DIR
from spa_trainer.ppo.service import ServiceConfig, export_due, run_service
from spa_trainer.ppo.step import PpoConfig

from .ppo_rollouts import rollout

CASES: list[dict[str, Any]] = json.loads(
    (SCHEMA_DIR.parent / "test" / "fixtures" / "ppo-export-schedule.json").read_text(encoding="utf-8")
)["cases"]


def _versions_during_steps(steps: int, export_every: int, start: int) -> list[int]:
    """The trainer's version during each step: one more per export after an earlier step."""
    exports_before = [sum(export_due(k, steps, export_every) for k in range(1, n)) for n in range(1, steps + 1)]
    return [start + e for e in exports_before]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"steps{c['steps']}-every{c['exportEvery']}")
def test_export_due_follows_the_shared_schedule(case: dict[str, Any]) -> None:
    steps, every = case["steps"], case["exportEvery"]
    assert [n for n in range(1, steps + 1) if export_due(n, steps, every)] == case["exportSteps"]
    assert _versions_during_steps(steps, every, start=1) == case["trainerVersions"]


def test_the_service_exports_and_counts_staleness_on_the_shared_schedule(tmp_path: Path) -> None:
    """A real run of the case steps 3, export every 2: versions during steps, exports, staleness."""
    case = next(c for c in CASES if (c["steps"], c["exportEvery"]) == (3, 2))
    # Step n trains on one group sampled by v1: its staleness is the trainer's version − 1.
    records = [
        rollout(f"t{g}{m}", f"g{g}", ["Right"] if m == "a" else ["Left"], [1.0 if m == "a" else -0.1],
                success=m == "a", policy_version=1)
        for g in range(3) for m in "ab"
    ]  # fmt: skip
    data = tmp_path / "rollouts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cfg = ServiceConfig(
        model="tiny", input=f"jsonl:{data}", out=str(tmp_path / "run"), steps=3, groups_per_step=1, group_size=2,
        export_every=2, export_root=str(tmp_path / "policy"), start_version=1, max_staleness=0,
        ppo=PpoConfig(keep_ratio=1.0, micro_batch_size=2),
    )  # fmt: skip

    progress = run_service(cfg)

    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["trainer_version"] for m in metrics] == case["trainerVersions"]
    assert [m["staleness"] for m in metrics] == [{str(v - 1): 2} for v in case["trainerVersions"]]
    exported = sorted(json.loads(p.read_text())["step"] for p in (tmp_path / "policy").glob("v*/manifest.json"))
    assert exported == case["exportSteps"]
    assert progress.version == 1 + len(case["exportSteps"])
