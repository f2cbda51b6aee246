"""Import direction in `spa_trainer`: the layers of pyproject.toml's `[tool.import-layers]`.

    python tools/import_layers.py [ROOT]   # ROOT: the folder of pyproject.toml (default trainer/)

A layer lists subpackages (`sft`: every module under spa_trainer/sft/) or modules (`otlp`,
`experiments.plan_probe`); a module belongs to the longest entry naming it or a package it is in.
A module may import its own entry's modules and those of its layer or lower ones, never of a
higher one; the entries of a layer written with `|` import none of each other; a module in no
layer, or an import cycle between modules, fails too. Every import counts, also one inside a
function (a lazy import closes a cycle as well).

Hand-written because the tool made for such contracts, import-linter, is not installable here, and
ruff cannot say it: its banned-api rule (TID251) bans a module for every file, and
per-file-ignores can only lift all bans of a file at once, so "A may import B but not C" is out of
reach in one package, and ruff has no rule that finds an import cycle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (requires-python): the same parser, as pip vendors it
    from pip._vendor import tomli as tomllib


def module_name(path: Path, package_dir: Path) -> str:
    """The dotted name of the module at `path` inside the package (`sft/train.py` → `sft.train`; a
    package's `__init__.py` is the package itself)."""
    parts = path.relative_to(package_dir).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_imports(path: Path, module: str, package: str, modules: set[str]) -> list[tuple[int, str]]:
    """(line, module) for every import of a module of `package` in the file of `module` at `path`;
    `from X import name` counts as an import of the module X.name when that module exists."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = [*here[: len(here) - node.level + 1], *((node.module or "").split(".") if node.module else [])]
            elif (node.module or "").split(".")[0] == package:
                base = (node.module or "").split(".")[1:]
            else:
                continue
            for alias in node.names:
                target = ".".join([*base, alias.name])
                found.append((node.lineno, target if target in modules else ".".join(base)))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.partition(".")[2]) for a in node.names if a.name.startswith(f"{package}.")]
    return [(line, target) for line, target in found if target]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (module → modules it imports) as a path, or None."""
    done: set[str] = set()

    def visit(trail: list[str]) -> list[str] | None:
        for target in sorted(graph.get(trail[-1], ())):
            if target in trail:
                return [*trail[trail.index(target) :], target]
            if target not in done and (cycle := visit([*trail, target])):
                return cycle
        done.add(trail[-1])
        return None

    return next((cycle for module in sorted(graph) if module not in done and (cycle := visit([module]))), None)


def unit_of(module: str, rank: dict[str, int]) -> str | None:
    """The layer entry `module` belongs to: itself, or the longest entry naming a package it is in."""
    parts = module.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in rank), None)


def check(root: Path) -> list[str]:
    """The violations in the package under `root` (the folder holding pyproject.toml)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["import-layers"]
    package, layers = config["package"], config["layers"]
    rank = {name: i for i, layer in enumerate(layers) for name in layer.replace("|", " ").split()}
    package_dir = root / package
    files = {module_name(path, package_dir): path for path in sorted(package_dir.rglob("*.py"))}
    errors: list[str] = []
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        where, unit = path.relative_to(root), unit_of(module, rank)
        if not module:
            continue
        if unit is None:
            errors.append(f"{where}: module {module} is in no layer of [tool.import-layers] in pyproject.toml")
            continue
        for line, target in package_imports(path, module, package, set(files)):
            graph.setdefault(module, set()).add(target)
            other = unit_of(target, rank)
            if other is None or other == unit:
                continue
            if rank[other] < rank[unit]:
                errors.append(f"{where}:{line}: {module} (layer {rank[unit] + 1}) imports {target} "
                              f"(layer {rank[other] + 1}, higher): imports go down the layers")  # fmt: skip
            elif rank[other] == rank[unit] and "|" in layers[rank[unit]]:
                errors.append(f"{where}:{line}: {module} imports {target}: independent parts of one layer")
    cycle = find_cycle(graph)
    if cycle:
        errors.append(f"{package}: import cycle {' -> '.join(cycle)}")
    return errors


if __name__ == "__main__":
    problems = check(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    print("\n".join(problems) or "import layers: ok", file=sys.stderr if problems else sys.stdout)
    sys.exit(1 if problems else 0)
