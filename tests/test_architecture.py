"""The dependency rule from docs/architecture.md §1, checked on the source with ``ast``.

Apps form a DAG: ``accounts`` at the bottom; ``inventory`` above it; ``telemetry`` above that
(it names inventory's clusters and cards); ``alerts``, ``cost``, ``dashboards`` and ``rollout``
on top of those; ``simulation`` at the very top. ``cluster_portal.web`` (shared web plumbing) may
be used by every app and itself uses only ``accounts``. Relative imports are resolved and checked
too. Only ``telemetry`` touches the store: ``Sample``, ``Frame``, ``Rollup`` and the frame dtypes.
Inside ``telemetry`` the layers are floors (docs/architecture.md §2): every import runs down
``TELEMETRY_FLOORS``, exporter families are pure Python, receivers write through ``ingest``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# app -> the apps it may import (besides itself and cluster_portal.web).
ALLOWED: dict[str, set[str]] = {
    "accounts": set(),
    "inventory": {"accounts"},
    "telemetry": {"accounts", "inventory"},
    "alerts": {"accounts", "inventory", "telemetry"},
    "cost": {"accounts", "inventory", "telemetry", "scheduling"},
    # dashboards reads rollout for the customer home's migration progress (rollout imports no
    # dashboards: still one direction).
    "dashboards": {"accounts", "inventory", "telemetry", "alerts", "cost", "rollout", "scheduling"},
    "rollout": {"accounts", "inventory", "telemetry"},
    # The workload scheduler's view (jobs, allocations, account → tenant); cost, dashboards
    # and simulation may read it later, it reads none of them.
    "scheduling": {"accounts", "inventory", "telemetry"},
    "simulation": {
        "accounts",
        "inventory",
        "telemetry",
        "alerts",
        "cost",
        "dashboards",
        "rollout",
        "scheduling",
    },
}
APPS = set(ALLOWED)
WEB = "cluster_portal.web"
STORE_NAMES = {"Sample", "Frame", "FrameLayout", "Rollup", "RollupWatermark"}
STORE_MODULES = ("telemetry.store.frames", "telemetry.store.samples", "telemetry.store.compaction")
DTYPE_NAMES = {"VALUE_DTYPE", "SUM_DTYPE", "COUNT_DTYPE"}


def _module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path | None = None) -> list[tuple[str, set[str]]]:
    """Every imported module with the names taken from it; relative imports resolved."""
    root = root or ROOT
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_of(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[str, set[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, set()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((module, {alias.name for alias in node.names}))
    return found


def dag_violations(root: Path | None = None) -> list[str]:
    root = root or ROOT
    found = []
    for app in sorted(APPS | {WEB.replace(".", "/")}):
        for path in sorted((root / app).rglob("*.py")):
            if "migrations" in path.parts or "engine" in path.relative_to(root).parts[1:2]:
                continue
            me = app.replace("/", ".")
            allowed = ALLOWED.get(me, {"accounts"}) | {me.split(".")[0]}
            for module, _names in imports_of(path, root):
                top = module.split(".")[0]
                if module.startswith(WEB):
                    continue
                if top == "cluster_portal" and me != WEB:
                    found.append(f"{path.relative_to(root)} imports {module}")
                elif top in APPS and top not in allowed:
                    found.append(f"{path.relative_to(root)} imports {module}")
    return found


def seal_violations(root: Path | None = None) -> list[str]:
    root = root or ROOT
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        # Tests and benchmarks build store-level fixtures on purpose (they test the store).
        if (
            rel.parts[0] in {"telemetry", "tests", "bench", ".venv", "var"}
            or "migrations" in rel.parts
        ):
            continue
        for module, names in imports_of(path, root):
            if module.startswith(STORE_MODULES):
                found.append(f"{rel} imports {module}")
            elif module.startswith("telemetry.models") and names & STORE_NAMES:
                found.append(f"{rel} imports {sorted(names & STORE_NAMES)} from {module}")
            elif module.startswith("telemetry") and names & DTYPE_NAMES:
                found.append(f"{rel} imports the frame dtype from {module}")
    return found


def test_apps_import_only_down_the_dag():
    assert dag_violations() == []


def test_only_telemetry_touches_the_store():
    assert seal_violations() == []


def test_the_checker_catches_a_forbidden_import_relative_ones_too(tmp_path, monkeypatch):
    (tmp_path / "telemetry" / "api").mkdir(parents=True)
    (tmp_path / "telemetry" / "bad.py").write_text("from rollout.models import Plan\n")
    (tmp_path / "accounts").mkdir()
    (tmp_path / "accounts" / "worse.py").write_text("from ..alerts.models import Alert\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert dag_violations(tmp_path) == [
        "accounts/worse.py imports alerts.models",
        "telemetry/bad.py imports rollout.models",
    ]


def test_the_seal_catches_a_store_import_outside_telemetry(tmp_path):
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "peek.py").write_text(
        "from telemetry.models import Entity, Frame\nfrom telemetry.store.frames import VALUE_DTYPE\n"
    )
    assert seal_violations(tmp_path) == [
        "dashboards/peek.py imports ['Frame'] from telemetry.models",
        "dashboards/peek.py imports telemetry.store.frames",
    ]


def module_cycles(root: Path | None = None) -> list[list[str]]:
    """Import cycles among the apps' modules (function-local imports included, since a late
    import only hides a cycle). The engine is left out: its modules name ``Engine`` for type
    hints only."""
    root = root or ROOT
    modules: dict[str, Path] = {}
    for app in sorted(APPS | {"cluster_portal"}):
        for path in (root / app).rglob("*.py"):
            if "migrations" in path.parts or path.relative_to(root).parts[:2] == (
                "simulation",
                "engine",
            ):
                continue
            modules[_module_of(path, root)] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for imported, names in imports_of(path, root):
            targets |= {imported} | {f"{imported}.{name}" for name in names}
        graph[module] = (targets & modules.keys()) - {module}
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_imports_itself_through_a_cycle():
    assert module_cycles() == []


def test_the_cycle_finder_sees_a_late_import(tmp_path):
    (tmp_path / "simulation" / "services").mkdir(parents=True)
    (tmp_path / "simulation" / "tasks.py").write_text("from simulation.services.work import run\n")
    (tmp_path / "simulation" / "services" / "work.py").write_text(
        "def queue():\n    from simulation.tasks import task\n"
    )
    assert module_cycles(tmp_path) == [["simulation.services.work", "simulation.tasks"]]


# Telemetry's floors, bottom to top (docs/architecture.md §2): a module may import its own
# floor and the ones below it, never one above. The key is the first name under ``telemetry``.
TELEMETRY_FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "models"),  # the rows and the errors every floor may raise
    ("families",),  # exporter-family knowledge: pure Python (checked apart, below)
    ("catalogue",),  # names -> ids, caps, refusals, heartbeats, bindings, vouching
    ("store",),  # samples, frames, rollups, provenance
    ("read",),  # the one read API (local store or PromQL); never ingest
    ("ingest",),  # the one pipeline every receiver calls
    ("receivers",),  # text, JSON, remote-write, scrape, twin, PromQL sync, scheduler
    ("api", "tasks", "admin", "views", "urls", "apps", "management", ""),  # the doors
)
FLOOR_OF = {name: level for level, names in enumerate(TELEMETRY_FLOORS) for name in names}
# Exporter families are pure: no Django, no rows, nothing of the project outside them.
FAMILIES_MAY_IMPORT = ("telemetry.families", "telemetry.errors")
# Receivers reach the store's writers only through the one ingest pipeline (telemetry.ingest).
STORE_WRITERS = ("telemetry.store.samples", "telemetry.store.frames")


def _telemetry_part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "telemetry":
        return None
    return parts[1] if len(parts) > 1 else ""


def floor_violations(root: Path | None = None) -> list[str]:
    """Imports inside ``telemetry`` that run up a floor (function-local ones too), a module on
    no floor, an exporter-family module that imports Django or anything but families, and a
    receiver that calls the store's writers around the ingest pipeline."""
    root = root or ROOT
    found = []
    for path in sorted((root / "telemetry").rglob("*.py")):
        rel = path.relative_to(root)
        if "migrations" in rel.parts:
            continue
        here = _telemetry_part(_module_of(path, root))
        if here not in FLOOR_OF:
            found.append(f"{rel} is on no floor (add telemetry/{here} to TELEMETRY_FLOORS)")
            continue
        for module, _names in imports_of(path, root):
            there = _telemetry_part(module)
            if here == "families" and not (
                module.startswith(FAMILIES_MAY_IMPORT) or module.split(".")[0] not in PROJECT
            ):
                found.append(f"{rel} imports {module} (families are pure Python)")
            elif there is not None and FLOOR_OF.get(there, len(TELEMETRY_FLOORS)) > FLOOR_OF[here]:
                found.append(f"{rel} imports {module} (up from {here} to {there or 'telemetry'})")
            elif here == "receivers" and module.startswith(STORE_WRITERS):
                found.append(f"{rel} imports {module} (receivers write through telemetry.ingest)")
    return found


PROJECT = APPS | {"cluster_portal", "django", "rest_framework", "celery"}


def test_telemetry_imports_only_down_its_floors():
    assert floor_violations() == []


def test_the_floor_checker_catches_a_back_arrow_and_an_impure_family(tmp_path):
    for folder in ("read", "store", "families", "ingest", "receivers", "gadgets"):
        (tmp_path / "telemetry" / folder).mkdir(parents=True)
    (tmp_path / "telemetry" / "read" / "peek.py").write_text(
        "def late():\n    from telemetry.ingest.pipeline import ingest_mapping_report\n"
    )
    (tmp_path / "telemetry" / "store" / "up.py").write_text("from ..read.local import series\n")
    (tmp_path / "telemetry" / "store" / "down.py").write_text(
        "from telemetry.models import Frame\nfrom ..catalogue import registry\n"
    )
    (tmp_path / "telemetry" / "families" / "impure.py").write_text(
        "from django.conf import settings\nfrom telemetry.models import Entity\nimport math\n"
    )
    (tmp_path / "telemetry" / "ingest" / "ok.py").write_text(
        "from telemetry.read import series\nfrom telemetry.families import parse\n"
    )
    (tmp_path / "telemetry" / "receivers" / "shortcut.py").write_text(
        "from telemetry.ingest.rows import rows_store\nfrom ..store.samples import samples_write\n"
    )
    (tmp_path / "telemetry" / "gadgets" / "new.py").write_text("")
    assert floor_violations(tmp_path) == [
        "telemetry/families/impure.py imports django.conf (families are pure Python)",
        "telemetry/families/impure.py imports telemetry.models (families are pure Python)",
        "telemetry/gadgets/new.py is on no floor (add telemetry/gadgets to TELEMETRY_FLOORS)",
        "telemetry/read/peek.py imports telemetry.ingest.pipeline (up from read to ingest)",
        "telemetry/receivers/shortcut.py imports telemetry.store.samples"
        " (receivers write through telemetry.ingest)",
        "telemetry/store/up.py imports telemetry.read.local (up from store to read)",
    ]


INVENTORY_ROWS = {"Supernode", "Rack", "Node", "Accelerator", "Link"}
CREATORS = {"create", "bulk_create", "get_or_create", "update_or_create"}


def inventory_creators(root: Path | None = None) -> list[str]:
    """Calls that create topology rows (``Node.objects.bulk_create(...)``) outside
    ``inventory``: docs/architecture.md §1 gives that job to the inventory service alone."""
    root = root or ROOT
    found = []
    for app in sorted(APPS - {"inventory"}):
        for path in sorted((root / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                manager = node.func.value
                if (
                    node.func.attr in CREATORS
                    and isinstance(manager, ast.Attribute)
                    and manager.attr == "objects"
                    and isinstance(manager.value, ast.Name)
                    and manager.value.id in INVENTORY_ROWS
                ):
                    rel = path.relative_to(root)
                    found.append(f"{rel}:{node.lineno} {manager.value.id}.objects.{node.func.attr}")
    return found


def test_only_the_inventory_service_creates_topology_rows():
    assert inventory_creators() == []


def test_the_creator_check_sees_a_bulk_create_elsewhere(tmp_path):
    (tmp_path / "telemetry").mkdir()
    (tmp_path / "telemetry" / "sneak.py").write_text(
        "from inventory.models import Node\nNode.objects.bulk_create([])\n"
    )
    assert inventory_creators(tmp_path) == ["telemetry/sneak.py:2 Node.objects.bulk_create"]
