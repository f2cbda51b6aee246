"""Issue 42 item 6: a full disk or an unwritable folder ends a trainer with one line naming the folder
(and for a full disk the space needed and free), exit 2, instead of a traceback; a killed checkpoint
save's hidden temp folder is removed when the trainer starts again."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from safetensors import SafetensorError
from transformers import AutoTokenizer

from spa_trainer.cli.errors import exit_code
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.train import run_sft
from spa_trainer.storage import StorageError
from spa_trainer.training import checkpoint
from spa_trainer.training.checkpoint import write_atomic_checkpoint

from .synthetic import sokoban_rows, write_jsonl

# What safetensors raises when the disk fills under `save_file` (the 38-line traceback ended so).
DISK_FULL = 'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'


def _fill_then(error: BaseException):
    def fill(tmp: Path) -> None:
        (tmp / "model.safetensors").write_bytes(b"\0" * 4096)  # some of the checkpoint got written
        raise error

    return fill


@pytest.mark.parametrize(
    "error",
    [SafetensorError(DISK_FULL), OSError(errno.ENOSPC, "No space left on device")],
    ids=["safetensors", "oserror"],
)
def test_disk_full_is_one_line_naming_the_folder_and_space_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], error: BaseException
) -> None:
    def fill(tmp: Path) -> None:
        (tmp / "weights").write_bytes(b"\0" * 3_000_000)

    write_atomic_checkpoint(tmp_path, 1, fill)
    code = exit_code("sft", lambda: write_atomic_checkpoint(tmp_path, 2, _fill_then(error)))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    root = tmp_path / "checkpoints"
    assert err.startswith(f"[sft] error: the disk of {root} is full (needs about 3.0 MB, ")
    assert " MB free)" in err
    # Nothing half-written is left: the temp folder is gone, the old checkpoint stays latest.
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_00000001"]


def test_disk_full_through_save_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_dir: Path) -> None:
    """The SFT checkpoint's own writer: safetensors' error, raised where the optimizer is saved."""
    from .test_checkpoint import _setup  # the tiny model, optimizer and schedule

    model, opt, sched = _setup(tiny_dir)

    def full(*_args: object, **_kwargs: object) -> None:
        raise SafetensorError(DISK_FULL)

    monkeypatch.setattr(checkpoint, "save_file", full)
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    with pytest.raises(
        StorageError, match=r"^the disk of .*checkpoints is full \(needs about [\d.]+ MB, [\d.]+ MB free\)"
    ):
        checkpoint.save_checkpoint(tmp_path, model, tok, opt, sched, checkpoint.TrainerState(step=1))
    assert list((tmp_path / "checkpoints").iterdir()) == []


_UNWRITABLE = """
import sys
from pathlib import Path
from spa_trainer.cli.errors import exit_code
from spa_trainer.training.checkpoint import write_atomic_checkpoint
sys.exit(exit_code("ppo", lambda: write_atomic_checkpoint(Path(sys.argv[1]), 1, lambda tmp: None)))
"""


def _without_root_override() -> list[str]:
    """Root writes into any folder: as root, the child runs without the capabilities that override
    a folder's mode (util-linux setpriv), so a read-only folder is read-only to it too."""
    if os.geteuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search"
    return [shutil.which("setpriv") or "setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


@pytest.mark.parametrize("where", ["run folder", "checkpoints folder"])
def test_unwritable_folder_is_one_line_naming_it_exit_2(where: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="spa-readonly-"))
    try:
        run = base / "run"
        (run / "checkpoints").mkdir(parents=True)
        readonly = run if where == "run folder" else run / "checkpoints"
        if where == "run folder":
            shutil.rmtree(run / "checkpoints")
        for folder in (base, run, readonly):
            folder.chmod(0o755)
        readonly.chmod(0o555)  # read and enter, never write
        trainer = Path(__file__).resolve().parents[1]
        done = subprocess.run(
            [*_without_root_override(), sys.executable, "-c", _UNWRITABLE, str(run)],
            cwd=trainer,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(trainer)},
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"[ppo] error: cannot write into {run / 'checkpoints'}: EACCES"), done.stderr
    finally:
        for folder in (base, *base.rglob("*")):
            if folder.is_dir():
                folder.chmod(0o755)
        shutil.rmtree(base)


def test_an_unwritable_file_elsewhere_is_one_line_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def write() -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "steps.jsonl"))

    assert exit_code("sft", write) == 2
    assert capsys.readouterr().err == (
        f"[sft] error: cannot write into {tmp_path}: EACCES (not writable by this user); "
        "make it writable or point the run elsewhere\n"
    )


def test_other_errors_keep_their_traceback() -> None:
    def bug() -> None:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError, match="Input/output"):
        exit_code("sft", bug)


def test_a_killed_saves_temp_folder_is_removed_when_sft_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(4))
    cfg = replace(SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=1, batch_size=2, eval_rows=2))
    root = tmp_path / "run" / "checkpoints"
    stale = root / ".step_00000002.k1ll3d"  # what a save killed mid-write leaves (2.3 MB in the issue)
    stale.mkdir(parents=True)
    (stale / "optimizer.safetensors").write_bytes(b"\0" * 1024)
    (root / ".latest.tmp").write_text("step_00000002")
    run_sft(cfg)
    assert not stale.exists() and not (root / ".latest.tmp").exists()
    assert any(p.name.startswith("step_") for p in root.iterdir())
    assert f"[sft] removed {stale}, left by a checkpoint save that was cut off" in capsys.readouterr().err
