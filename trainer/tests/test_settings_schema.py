"""One definition per setting (issue 34 item 3): the trainer's config dataclasses make its flags
and schemas/trainer-settings.json, the file the TS side builds trainer command lines from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from spa_trainer.cli.settings import add_settings, setting, settings_of
from spa_trainer.ppo.config import parse_args as ppo_args
from spa_trainer.settings_schema import COMMANDS, as_prettier_json, settings_schema
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.config import parse_args as sft_args

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "trainer-settings.json"
REQUIRED = {"sft": ["--input", "x"], "ppo": ["--model", "m", "--input", "x", "--out", "o", "--steps", "1"]}


def test_the_checked_in_schema_is_what_the_dataclasses_make() -> None:
    regenerate = "cd trainer && .venv/bin/python -m spa_trainer.settings_schema > ../schemas/trainer-settings.json"
    assert SCHEMA_FILE.read_text("utf-8") == as_prettier_json(settings_schema()), f"out of date: {regenerate}"


def _parser(cls: type) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_settings(parser, cls)
    return parser


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_is_a_dataclass_field_of_the_schema(command: str) -> None:
    _, cls = COMMANDS[command]
    properties = settings_schema()["$defs"][command]["properties"]
    flags = {f for a in _parser(cls)._actions for f in a.option_strings} - {"-h", "--help"}
    switches_off = {"--no-" + p["x-flag"][2:] for p in properties.values() if p.get("default") is True}
    assert flags == {p["x-flag"] for p in properties.values()} | switches_off
    assert all(p["x-flag"] == "--" + name.replace("_", "-") for name, p in properties.items())
    assert list(properties) == [s.name for s in settings_of(cls)]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_flags_refuse_what_the_schema_refuses(command: str) -> None:
    """Each bound of the schema is the flag's: a value past it is refused naming the flag, the bound parses."""
    _, cls = COMMANDS[command]
    parser = _parser(cls)
    for name, p in settings_schema()["$defs"][command]["properties"].items():
        integer = "integer" in p["type"]
        for bound, past in (("minimum", -1), ("maximum", 1), ("exclusiveMinimum", 0), ("exclusiveMaximum", 0)):
            if bound not in p:
                continue
            value = p[bound] + past if integer or past == 0 else p[bound] + past * max(abs(p[bound]), 1)
            with pytest.raises(argparse.ArgumentError, match=f"^{p['x-flag']} must be"):
                parser.parse_args([*REQUIRED[command], p["x-flag"], str(value)])
            if bound in ("minimum", "maximum"):
                assert getattr(parser.parse_args([*REQUIRED[command], p["x-flag"], str(p[bound])]), name) == p[bound]


def test_parsed_flags_fill_nested_configs() -> None:
    cfg = ppo_args([*REQUIRED["ppo"], "--keep-ratio", "0.5", "--no-grpo-std-norm", "--group-size", "3"])
    assert (cfg.ppo.keep_ratio, cfg.ppo.grpo_std_norm, cfg.group_size) == (0.5, False, 3)
    assert sft_args([*REQUIRED["sft"], "--export", "d", "--publish", "t"]).export == "d"
    assert SftConfig().betas == (0.9, 0.95)  # a constant of the recipe, not a flag
    assert "betas" not in settings_schema()["$defs"]["sft"]["properties"]


def test_a_numeric_setting_without_a_range_is_refused() -> None:
    from dataclasses import dataclass

    @dataclass
    class Loose:
        count: int = setting(1, help="no range")

    with pytest.raises(TypeError, match="Loose.count: a numeric setting needs a range"):
        list(settings_of(Loose))


def test_the_schema_is_json_schema_shaped() -> None:
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    for command, (module, _) in COMMANDS.items():
        d = schema["$defs"][command]
        assert (d["x-module"], d["type"], d["additionalProperties"]) == (module, "object", False)
        assert set(d["required"]) <= set(d["properties"])
