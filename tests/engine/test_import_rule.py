"""The engine must never import Django or any project module outside simulation.engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "simulation" / "engine"
FORBIDDEN_ROOTS = {
    "django",
    "rest_framework",
    "celery",
    "rollout",
    "cluster_portal",
    "accounts",
    "inventory",
    "telemetry",
    "alerts",
    "cost",
    "dashboards",
}


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.level if hasattr(node, "level") else 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", node.level))
    return out


def test_engine_sources_import_nothing_from_django_or_the_project():
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) > 10
    bad = []
    for f in files:
        for name, level in _imports(f):
            root = name.split(".")[0]
            if level == 0 and (
                root in FORBIDDEN_ROOTS
                or (root == "simulation" and not name.startswith("simulation.engine"))
            ):
                bad.append(f"{f.relative_to(ENGINE)}: {name}")
    assert bad == []


def test_importing_the_engine_and_running_a_step_loads_no_django_module():
    code = (
        "import sys; import simulation.engine as e;"
        "eng = e.Engine(e.default_scenario(256, 1, n_training_jobs=4, n_services=2));"
        "eng.step();"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        f"{sorted(FORBIDDEN_ROOTS)!r}];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ENGINE.parents[1],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
