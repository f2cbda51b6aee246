"""The trainer's command lines refuse numbers out of range (issue 33 items 4 and 5): every numeric
flag of every module has a range, a bad value ends in one line naming the flag and the range with
exit code 2 (not a ZeroDivisionError deep in the loop), and `--help` states each range."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from spa_trainer import export
from spa_trainer.experiments import learning_check, plan_probe
from spa_trainer.ppo import service as ppo_service
from spa_trainer.sft import config as sft

TRAINER = Path(__file__).resolve().parents[1]

# Each module's command line: how to parse it, and the flags it requires.
COMMANDS: dict[str, tuple[Callable[[list[str]], object], list[str]]] = {
    "sft": (sft.parse_args, ["--input", "jsonl:rows.jsonl"]),
    "ppo_service": (ppo_service.parse_args, ["--model", "tiny", "--input", "x", "--out", "r", "--steps", "1"]),
    "export": (export.run_export, ["--model", "tiny", "--out", "artifacts"]),
    "learning_check": (learning_check.parse_args, ["--arm", "a", "--train", "t", "--heldout", "h", "--out", "o"]),
    "plan_probe": (plan_probe.main, ["--model", "tiny-cells", "--rows", "rows.jsonl"]),
}


def parser_of(module: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The ArgumentParser a module's command line builds (caught as it parses)."""
    seen: list[argparse.ArgumentParser] = []

    class Caught(Exception):
        pass

    def catch(self: argparse.ArgumentParser, *_: object, **__: object) -> None:
        seen.append(self)
        raise Caught

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    parse, required = COMMANDS[module]
    with pytest.raises(Caught):
        parse(required)
    monkeypatch.undo()
    return seen[0]


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_every_numeric_flag_has_a_range_stated_in_its_help(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = parser_of(module, monkeypatch)
    numeric = [a for a in parser._actions if a.type is not None]  # argparse keeps them here
    assert numeric, module
    for action in numeric:
        flag = action.option_strings[0]
        assert action.type not in (int, float), f"{module} {flag}: a bare {action.type.__name__} has no range"
        check = action.type
        assert callable(check)
        for huge in ("1e12", "99999999999999999999"):
            with pytest.raises(argparse.ArgumentError, match=f"^{flag} must be"):
                check(huge)
        help_text = action.help or ""
        assert ".." in help_text or " x " in help_text, f"{module} {flag}: no range in help"


@pytest.mark.parametrize(
    ("module", "flag", "value", "message"),
    [
        ("sft", "--batch-size", "0", "--batch-size must be an integer in 1..65536, got 0"),
        ("sft", "--epochs", "99999999999999999999", "--epochs must be an integer in 1..1000, got 99999999999999999999"),
        ("sft", "--lr", "nan", "--lr must be a number with 0 < x ≤ 1, got nan"),
        ("sft", "--val-fraction", "1", "--val-fraction must be a number with 0 ≤ x < 1, got 1"),
        ("sft", "--checkpoint-every", "0", "--checkpoint-every must be an integer in 1..100000000, got 0"),
        ("sft", "--seed", "2147483648", "--seed must be an integer in 0..2147483647, got 2147483648"),
        ("ppo_service", "--group-size", "0", "--group-size must be an integer in 1..1000, got 0"),
        ("ppo_service", "--keep-ratio", "0", "--keep-ratio must be a number with 0 < x ≤ 1, got 0"),
        ("ppo_service", "--steps", "1e12", "--steps must be an integer in 1..100000, got 1e12"),
        ("export", "--version", "-1", "--version must be an integer in 0..1000000000, got -1"),
        ("learning_check", "--batch-size", "0", "--batch-size must be an integer in 1..65536, got 0"),
        ("plan_probe", "--window", "0", "--window must be an integer in 1..131072, got 0"),
    ],
)
def test_a_value_out_of_range_is_a_usage_error_naming_the_flag(
    module: str, flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parse, required = COMMANDS[module]
    with pytest.raises(SystemExit) as ended:
        parse([*required, flag, value])
    assert ended.value.code == 2
    assert f"error: {message}\n" in capsys.readouterr().err


def test_sft_batch_size_0_ends_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    run = subprocess.run(
        [sys.executable, "-m", "spa_trainer.sft", "--input", f"jsonl:{rows}", "--batch-size", "0"],
        cwd=TRAINER,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert "--batch-size must be an integer in 1..65536, got 0" in run.stderr
    assert "Traceback" not in run.stderr


def test_help_states_the_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        sft.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "rows per optimizer step (SPA: 16) (1..65536)" in text
    assert "(0 < x ≤ 1)" in text
