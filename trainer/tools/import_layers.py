"""Import direction in `spa_trainer`: the layers of pyproject.toml's `[tool.import-layers]`.

    python tools/import_layers.py [ROOT]   # ROOT: the folder of pyproject.toml (default trainer/)

A module may import modules of its own layer or of lower ones, never of a higher one; modules of
a layer written with `|` import none of each other; a module in no layer, or an import cycle,
fails too. Every import counts, also one inside a function (a lazy import closes a cycle as well).

Hand-written because the tool made for such contracts, import-linter, is not installable here, and
ruff cannot say it: its banned-api rule (TID251) bans a module for every file, and
per-file-ignores can only lift all bans of a file at once, so "A may import B but not C" is out of
reach in a flat package, and ruff has no rule that finds an import cycle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (requires-python): the same parser, as pip vendors it
    from pip._vendor import tomli as tomllib


def package_imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, module) for every import of a module of `package` in the file at `path`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").split(".")[0] == package):
            module = (node.module or "") if node.level == 1 else (node.module or "").partition(".")[2]
            names = [module.split(".")[0]] if module else [alias.name for alias in node.names]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1]) for a in node.names if a.name.startswith(f"{package}.")]
    return found


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


def check(root: Path) -> list[str]:
    """The violations in the package under `root` (the folder holding pyproject.toml)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["import-layers"]
    package, layers = config["package"], config["layers"]
    rank = {name: i for i, layer in enumerate(layers) for name in layer.replace("|", " ").split()}
    errors: list[str] = []
    graph: dict[str, set[str]] = {}
    for path in sorted((root / package).glob("*.py")):
        module, where = path.stem, path.relative_to(root)
        if module == "__init__":
            continue
        if module not in rank:
            errors.append(f"{where}: module {module} is in no layer of [tool.import-layers] in pyproject.toml")
            continue
        for line, target in package_imports(path, package):
            graph.setdefault(module, set()).add(target)
            if target not in rank or target == module:
                continue
            if rank[target] < rank[module]:
                errors.append(f"{where}:{line}: {module} (layer {rank[module] + 1}) imports {target} "
                              f"(layer {rank[target] + 1}, higher): imports go down the layers")  # fmt: skip
            elif rank[target] == rank[module] and "|" in layers[rank[module]]:
                errors.append(f"{where}:{line}: {module} imports {target}: independent modules of one layer")
    cycle = find_cycle(graph)
    if cycle:
        errors.append(f"{package}: import cycle {' -> '.join(cycle)}")
    return errors


if __name__ == "__main__":
    problems = check(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    print("\n".join(problems) or "import layers: ok", file=sys.stderr if problems else sys.stdout)
    sys.exit(1 if problems else 0)
