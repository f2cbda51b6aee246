"""requirements.txt and pyproject.toml name the same dependencies (pyproject.toml is the source of truth)."""

from __future__ import annotations

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (requires-python): the same parser, as pip vendors it
    from pip._vendor import tomli as tomllib

TRAINER = Path(__file__).resolve().parents[1]


def test_requirements_txt_is_pyprojects_dependencies_plus_the_test_extra() -> None:
    project = tomllib.loads((TRAINER / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    lines = (TRAINER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    listed = [line.split("#")[0].replace(" ", "") for line in lines if line.split("#")[0].strip()]
    assert sorted(listed) == sorted(d.replace(" ", "") for d in declared)
