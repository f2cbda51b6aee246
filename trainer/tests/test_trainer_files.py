"""The files the trainer leaves for `spa run` (schemas/trainer-files.json; loop/trainer-files.ts
reads them): what the trainer writes is valid, and the schema refuses what the loop would."""

from __future__ import annotations

import json
from pathlib import Path

from spa_trainer.ppo.checkpoint import Progress, write_progress_file

from .json_schema import TRAINER_FILES, problems


def test_the_ppo_progress_file_is_valid(tmp_path: Path) -> None:
    progress = Progress(step=2, version=4, exported_step=2, records_trained=8, rejected={"bad-json": 1})
    progress.next_offsets = {0: 10}
    write_progress_file(tmp_path, progress, steps=2)
    written = json.loads((tmp_path / "progress.json").read_text("utf-8"))
    assert problems(written, TRAINER_FILES["ppo-progress"]) == []
    assert written["finished"] is True and "next_offsets" not in written


def test_the_schema_refuses_what_the_loop_cannot_read() -> None:
    schema = TRAINER_FILES["ppo-progress"]
    good = {"finished": False, "steps": 3, "step": 1, "version": 2, "exported_step": 0, "records_trained": 4,
            "rejected": {}, "over_max_staleness": 0}  # fmt: skip
    assert problems(good, schema) == []
    assert problems({k: v for k, v in good.items() if k != "version"}, schema) == ["$: no version"]
    assert problems({**good, "step": "1"}, schema) == ["$.step: '1' is not integer"]
    assert problems({**good, "policy": 2}, schema) == ["$: policy is not allowed"]
    metrics = TRAINER_FILES["sft-metrics"]
    assert problems({"finished": True, "step": 4, "exported_version": None, "val_loss": None}, metrics) == []
    assert problems({"finished": True, "step": 4}, metrics) == ["$: no exported_version"]
