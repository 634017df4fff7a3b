"""The dependency rule from DESIGN.md, checked on the source with ``ast``.

simulation → rollout → monitoring and simulation → monitoring only; ``simulation/engine``
imports neither Django nor any project package (it must run without Django).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = {"cluster_portal", "monitoring", "rollout", "simulation"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def violations(package: str, forbidden: set[str], allowed_prefixes: tuple[str, ...] = ()) -> list:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for module in imported_modules(path):
            top = module.split(".")[0]
            if module.startswith(allowed_prefixes):
                continue
            if top in forbidden:
                found.append(f"{path.relative_to(ROOT)} imports {module}")
    return found


def test_engine_imports_no_django_and_no_project_package():
    forbidden = PROJECT_PACKAGES | {"django", "rest_framework", "celery"}
    assert violations("simulation/engine", forbidden, ("simulation.engine",)) == []


def test_monitoring_imports_neither_rollout_nor_simulation():
    assert violations("monitoring", {"rollout", "simulation"}) == []


def test_rollout_does_not_import_simulation():
    assert violations("rollout", {"simulation"}) == []


def test_the_checker_catches_a_forbidden_import(tmp_path, monkeypatch):
    (tmp_path / "monitoring").mkdir()
    (tmp_path / "monitoring" / "bad.py").write_text("from rollout.models import Plan\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("monitoring", {"rollout"}) == ["monitoring/bad.py imports rollout.models"]
