"""A command's flags from its config dataclass: one definition of each trainer setting.

A field declared with `setting(...)` is a flag: `--<name with dashes>`, its help the field's `help`,
its type the annotation's (int and float flags checked against their range by `errors.int_in` /
`errors.float_in`, a `Literal` a choice, a bool a switch, a `tuple[Literal[...], ...]` one or more
choices, `--report-to tensorboard wandb` as transformers' `report_to`), its default the field's. A nested
config dataclass (the PPO service's `ppo: PpoConfig`) adds its own settings' flags. Fields
declared without `setting` are constants of the recipe, not flags. The same walk writes the JSON
Schema the TypeScript side builds its trainer command lines from (`spa_trainer.settings_schema`).

Hand-written rather than transformers' HfArgumentParser, which builds flags from dataclass fields
and `metadata["help"]` as well: it has no place for a range, the check that keeps a bad number a
one-line usage error naming the flag (cli/errors.py), and it writes no schema.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass
from typing import Any, Literal, TypeVar, Union

from .errors import float_in, float_range, int_in

T = TypeVar("T")


@dataclass(frozen=True)
class Range:
    """A number's allowed values: lo..hi, `above`/`below` excluding that bound (floats only)."""

    lo: float
    hi: float
    above: bool = False
    below: bool = False


def setting(
    default: Any = MISSING,
    *,
    help: str,
    range: tuple[float, float] | None = None,
    above: bool = False,
    below: bool = False,
    metavar: str | None = None,
    required: bool = False,
) -> Any:
    """A dataclass field that is also a command-line flag. The flag is required when the field has no
    default, or when `required` (the default then stands for "not given" in code that builds the config)."""
    meta = {"help": help, "range": Range(*range, above, below) if range else None, "metavar": metavar}
    meta["required"] = required
    return dataclasses.field(default=default, metadata={"setting": meta})


Kind = Literal["integer", "number", "string", "boolean", "array"]
"""A setting's JSON Schema type."""


@dataclass(frozen=True)
class Setting:
    """One flag: the field it sets, where that field lives (`ppo` for a nested config) and how it parses."""

    name: str
    path: tuple[str, ...]
    kind: Kind
    optional: bool  # None is a value (the flag may be left out with no default)
    default: Any
    required: bool
    help: str
    range: Range | None
    choices: tuple[str, ...] | None
    metavar: str | None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _kind(annotation: Any) -> tuple[Kind, bool, tuple[str, ...] | None]:
    """(JSON type, None allowed, choices) of a field's annotation; an array's choices are its items'."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and len(args) == 2 and args[1] is Ellipsis:
        kind, _, choices = _kind(args[0])
        if kind != "string" or choices is None:
            raise TypeError(f"a list setting's items must be a Literal of strings, not {args[0]}")
        return "array", False, choices
    if typing.get_origin(annotation) in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        kind, _, choices = _kind(inner[0])
        return kind, True, choices
    if typing.get_origin(annotation) is Literal:
        return "string", False, tuple(str(a) for a in args)
    kinds: dict[Any, Kind] = {int: "integer", float: "number", str: "string", bool: "boolean"}
    if annotation not in kinds:
        raise TypeError(
            f"a setting's type must be int, float, str, bool, a Literal or a tuple of one, not {annotation}"
        )
    return kinds[annotation], False, None


def settings_of(cls: type, path: tuple[str, ...] = ()) -> Iterator[Setting]:
    """The flags of config dataclass `cls`, nested configs' included, in field order."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            yield from settings_of(typing.cast(type, hints[f.name]), (*path, f.name))
            continue
        meta = f.metadata.get("setting")
        if meta is None:
            continue
        kind, optional, choices = _kind(hints[f.name])
        if kind in ("integer", "number") and meta["range"] is None:
            raise TypeError(f"{cls.__name__}.{f.name}: a numeric setting needs a range (its flag checks it)")
        required = meta["required"] or (f.default is MISSING and f.default_factory is MISSING)
        default = None if required else f.default
        yield Setting(
            f.name, path, kind, optional, default, required, meta["help"], meta["range"], choices, meta["metavar"]
        )


def _range_check(s: Setting, r: Range) -> Callable[[str], float]:
    """argparse's `type` of a numeric flag: the value checked against its range, errors naming the flag."""
    if s.kind == "integer":
        return int_in(s.flag, int(r.lo), int(r.hi))
    return float_in(s.flag, r.lo, r.hi, above=r.above, below=r.below)


def range_text(s: Setting) -> str | None:
    """The range as `--help` and the errors state it: `1..65536`, `0 < x ≤ 1`."""
    if s.range is None:
        return None
    if s.kind == "integer":
        return f"{int(s.range.lo)}..{int(s.range.hi)}"
    return float_range(s.range.lo, s.range.hi, s.range.above, s.range.below)


def add_settings(parser: argparse.ArgumentParser, cls: type) -> list[Setting]:
    """Adds a flag per setting of `cls` to `parser`; the settings, for `config_from`."""
    found = list(settings_of(cls))
    names = [s.name for s in found]
    if len(set(names)) < len(names):
        raise TypeError(f"{cls.__name__}: two settings share a name: {sorted(n for n in names if names.count(n) > 1)}")
    for s in found:
        bounds = range_text(s)
        help_text = f"{s.help} ({bounds})" if bounds else s.help
        if s.kind == "boolean":
            action = argparse.BooleanOptionalAction if s.default else "store_true"
            parser.add_argument(s.flag, dest=s.name, action=action, default=s.default, help=help_text)
            continue
        kw: dict[str, Any] = {"dest": s.name, "help": help_text}
        if s.range:
            kw["type"] = _range_check(s, s.range)
        if s.choices:
            kw["choices"] = s.choices
        if s.metavar:
            kw["metavar"] = s.metavar
        if s.kind == "array":
            kw["nargs"] = "+"
        parser.add_argument(s.flag, required=s.required, default=s.default, **kw)
    return found


def config_from(cls: type[T], args: argparse.Namespace, path: tuple[str, ...] = ()) -> T:
    """An instance of `cls` with every setting from the parsed `args` and the other fields' defaults."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(typing.cast(Any, cls)):
        if dataclasses.is_dataclass(hints[f.name]):
            values[f.name] = config_from(typing.cast(type, hints[f.name]), args, (*path, f.name))
        elif "setting" in f.metadata:
            value = getattr(args, f.name)
            values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


def json_schema(cls: type, title: str) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the settings of `cls` as one object keyed by field name;
    `x-flag` is each one's flag, `x-path` the nested config holding it when not the top."""
    properties: dict[str, Any] = {}
    for s in settings_of(cls):
        prop: dict[str, Any] = {"type": [s.kind, "null"] if s.optional else s.kind, "description": s.help}
        if s.kind == "array":
            prop["items"] = {"type": "string", "enum": list(s.choices or ())}
        elif s.choices:
            prop["enum"] = [*s.choices, *([None] if s.optional else [])]
        if s.range:
            lo, hi = (int(s.range.lo), int(s.range.hi)) if s.kind == "integer" else (s.range.lo, s.range.hi)
            prop["exclusiveMinimum" if s.range.above else "minimum"] = lo
            prop["exclusiveMaximum" if s.range.below else "maximum"] = hi
        if not s.required:
            prop["default"] = list(s.default) if isinstance(s.default, tuple) else s.default
        prop["x-flag"] = s.flag
        if s.path:
            prop["x-path"] = ".".join(s.path)
        properties[s.name] = prop
    required = [s.name for s in settings_of(cls) if s.required]
    return {"title": title, "type": "object", "properties": properties, "required": required, "additionalProperties": False}  # fmt: skip
