"""tools/import_layers.py (in npm run lint:py) passes on the package and fails on an upward import, an import
between independent subpackages, or a cycle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

TRAINER = Path(__file__).resolve().parents[1]


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    tool = TRAINER / "tools" / "import_layers.py"
    return subprocess.run([sys.executable, str(tool), str(root)], capture_output=True, text=True, check=False)


def test_the_package_keeps_its_layers() -> None:
    result = _check(TRAINER)
    assert result.returncode == 0, result.stderr


def test_an_upward_import_and_a_cycle_fail(tmp_path: Path) -> None:
    shutil.copy(TRAINER / "pyproject.toml", tmp_path)
    package = shutil.copytree(
        TRAINER / "spa_trainer", tmp_path / "spa_trainer", ignore=shutil.ignore_patterns("__pycache__")
    )
    with (package / "data" / "sft_rows.py").open("a") as f:  # the cycle this package once had, via a lazy import
        f.write("\n\ndef kafka() -> None:\n    from ..kafka.client import KafkaLog  # noqa: F401\n")
    (package / "json_files.py").write_text("from .cli.errors import exit_code  # noqa: F401\n")
    (package / "cli" / "errors.py").write_text("from .. import json_files  # noqa: F401\n")
    (package / "sft" / "masking.py").write_text("from ..ppo import step  # noqa: F401\n")
    result = _check(tmp_path)
    assert result.returncode == 1
    assert (
        "spa_trainer/data/sft_rows.py:" in result.stderr
        and "data.sft_rows (layer 7) imports kafka.client (layer 6, higher)" in result.stderr
    )
    assert "sft.masking imports ppo.step: independent parts of one layer" in result.stderr
    assert "import cycle cli.errors -> json_files -> cli.errors" in result.stderr
