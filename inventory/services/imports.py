"""Inventory import: a real cluster's topology from a CSV or YAML file (issue 22 part 2).

One service for the page, the API and ``manage.py inventory_import``. Each row names a node's
``hostname`` and optionally its ``rack``, ``supernode``, ``card_model`` (a hardware model's id
or name) and ``card_count``. Every row is validated first and every problem is reported at once
with its line; with any, nothing is written. Importing the same file again changes nothing
(every node counts as unchanged). A blank field leaves what the node has: an import adds what
the operator knows, it does not erase. Cards themselves are created by the exporters that see
them (a card's identity is its chip ID); the import states their model and count, and a card
registered on the node later takes the node's model.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import yaml
from django.db import transaction
from django.utils.translation import gettext as _

from inventory.models import DEFAULT_SUPERNODE, Accelerator, Cluster, HardwareModel, Node, Rack
from inventory.services.topology import Placement, nodes_ensure, nodes_update_grouped

COLUMNS = ("hostname", "rack", "supernode", "card_model", "card_count")
FORMATS = ("auto", "csv", "yaml")
MAX_ROWS = 50_000
MAX_CARDS_PER_NODE = 1024
# A refusal lists the first problems and counts the rest: a 49,999-row bad file once answered
# a 12.97 MB list of errors, which no one reads and every proxy chokes on.
MAX_LISTED_PROBLEMS = 100


def format_of(filename: str) -> str:
    """The format a file's name implies (``.csv``, ``.yaml``/``.yml``), else ``auto``."""
    name = filename.lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    return "auto"


@dataclass(frozen=True)
class ImportProblem:
    """One problem of an import file: its line (1 is the first), the field and what is wrong."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return _("line %(line)s, %(field)s: %(message)s") % {
            "line": self.line,
            "field": self.field,
            "message": self.message,
        }


class InventoryImportError(ValueError):
    """The file was refused (nothing was written). ``problems`` lists the first
    :data:`MAX_LISTED_PROBLEMS` problems found, ``problem_count`` counts them all."""

    def __init__(self, problems: list[ImportProblem]) -> None:
        self.problem_count = len(problems)
        self.problems = problems[:MAX_LISTED_PROBLEMS]
        super().__init__("; ".join([str(p) for p in self.problems] + self.more_lines()))

    @property
    def unlisted(self) -> int:
        """Problems found beyond the listed ones."""
        return self.problem_count - len(self.problems)

    def more_lines(self) -> list[str]:
        if not self.unlisted:
            return []
        return [
            _("… and %(n)s more problems (the first %(shown)s are listed).")
            % {
                "n": f"{self.unlisted:,}",
                "shown": len(self.problems),
            }
        ]


@dataclass
class ImportReport:
    """What an import did (or, with ``dry_run``, would do): nodes created, updated, unchanged."""

    dry_run: bool
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    racks_created: int = 0
    supernodes_created: int = 0
    cards_updated: int = 0

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "nodes": {
                "created": self.created,
                "updated": self.updated,
                "unchanged": self.unchanged,
            },
            "racks_created": self.racks_created,
            "supernodes_created": self.supernodes_created,
            "cards_updated": self.cards_updated,
        }


@dataclass(frozen=True)
class _Row:
    line: int
    hostname: str
    placement: Placement | None
    model: HardwareModel | None
    count: int | None


def inventory_import(
    *, cluster: Cluster, text: str, format: str = "auto", dry_run: bool = False
) -> ImportReport:
    """Validate and apply an inventory file to ``cluster`` in one transaction.

    Raises :class:`InventoryImportError` listing every problem (with its line) when any row is
    invalid; nothing is written then. ``dry_run`` validates and counts, then rolls back.
    """
    rows = _rows_validate(_records(text, format))
    with transaction.atomic():
        report = _apply(cluster, rows, dry_run=dry_run)
        if dry_run:
            transaction.set_rollback(True)
    return report


def _records(text: str, format: str) -> list[tuple[int, dict]]:
    """``(line, {column: value})`` for each row of the file, or an error naming the line."""
    if format not in FORMATS:
        raise InventoryImportError(
            [ImportProblem(0, "format", _("Use one of: %(f)s.") % {"f": ", ".join(FORMATS)})]
        )
    if format == "auto":
        first = next((line for line in text.splitlines() if line.strip()), "")
        format = "csv" if "," in first and "hostname" in first and ":" not in first else "yaml"
    records = _csv_records(text) if format == "csv" else _yaml_records(text)
    if not records:
        raise InventoryImportError([ImportProblem(1, "file", _("The file names no node."))])
    if len(records) > MAX_ROWS:
        raise InventoryImportError(
            [ImportProblem(1, "file", _("At most %(n)s rows per import.") % {"n": f"{MAX_ROWS:,}"})]
        )
    return records


def _csv_records(text: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")), skipinitialspace=True)
    header = [name.strip() for name in reader.fieldnames or []]
    problems = [
        ImportProblem(
            1,
            name or "?",
            _("Unknown column; the columns are %(c)s.") % {"c": ", ".join(COLUMNS)},
        )
        for name in header
        if name not in COLUMNS
    ]
    if "hostname" not in header:
        problems.append(ImportProblem(1, "hostname", _("The header needs a hostname column.")))
    if problems:
        raise InventoryImportError(problems)
    records = []
    try:
        for row in reader:
            values = {(k or "").strip(): v for k, v in row.items()}
            if None in row or "" in values:  # more cells than the header has
                records.append((reader.line_num, {"__extra__": True}))
                continue
            if not any((v or "").strip() for v in values.values()):
                continue
            if next(iter(row.values()), "").lstrip().startswith("#"):
                continue  # a comment line
            records.append((reader.line_num, values))
    except csv.Error as exc:
        raise InventoryImportError([ImportProblem(reader.line_num, "file", str(exc))]) from None
    return records


def _yaml_records(text: str) -> list[tuple[int, dict]]:
    """A list of mappings, or a mapping whose ``nodes`` is one; lines from the YAML nodes."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            document = loader.get_single_node()
            data = loader.construct_document(document) if document is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise InventoryImportError([ImportProblem(line, "file", problem)]) from None
    if isinstance(data, dict) and "nodes" in data:
        items = data["nodes"]
        document = next(
            (v for k, v in document.value if getattr(k, "value", None) == "nodes"), document
        )
    else:
        items = data
    if not isinstance(items, list):
        raise InventoryImportError(
            [ImportProblem(1, "file", _("Expected a list of nodes (or nodes: with one)."))]
        )
    records = []
    for item, node in zip(items, document.value, strict=True):
        line = node.start_mark.line + 1
        if not isinstance(item, dict):
            records.append((line, {"__not_mapping__": True}))
            continue
        records.append((line, {str(k): "" if v is None else str(v) for k, v in item.items()}))
    return records


def _rows_validate(records: list[tuple[int, dict]]) -> list[_Row]:
    models = list(HardwareModel.objects.all())
    by_name = {m.slug.lower(): m for m in models} | {m.name.lower(): m for m in models}
    known = ", ".join(sorted(m.slug for m in models)) or _("none (add one in the admin)")
    problems: list[ImportProblem] = []
    rows: list[_Row] = []
    first_line: dict[str, int] = {}

    def problem(line: int, name: str, message: str) -> None:
        problems.append(ImportProblem(line, name, message))

    for line, values in records:
        if values.get("__extra__"):
            problem(line, "file", _("More cells than the header has columns."))
            continue
        if values.get("__not_mapping__"):
            problem(line, "file", _("Each node is a mapping of hostname, rack, ..."))
            continue
        for name in values:
            if name not in COLUMNS:
                problem(
                    line,
                    name,
                    _("Unknown field; the fields are %(c)s.") % {"c": ", ".join(COLUMNS)},
                )
        hostname = (values.get("hostname") or "").strip()
        rack = (values.get("rack") or "").strip()
        supernode = (values.get("supernode") or "").strip()
        model_text = (values.get("card_model") or "").strip()
        count_text = (values.get("card_count") or "").strip()
        if not hostname:
            problem(line, "hostname", _("A hostname is required."))
        elif len(hostname) > 200 or any(c.isspace() for c in hostname):
            problem(line, "hostname", _("A hostname has no spaces and at most 200 characters."))
        elif hostname in first_line:
            problem(
                line,
                "hostname",
                _("%(host)s is already on line %(line)s.")
                % {"host": hostname, "line": first_line[hostname]},
            )
        else:
            first_line[hostname] = line
        for name, value in (("rack", rack), ("supernode", supernode)):
            if len(value) > 60:
                problem(line, name, _("At most 60 characters."))
        if supernode and not rack:
            problem(line, "supernode", _("A supernode needs a rack."))
        model = None
        if model_text:
            model = by_name.get(model_text.lower())
            if model is None:
                problem(
                    line,
                    "card_model",
                    _("Unknown card model %(model)s; the known models are %(known)s.")
                    % {"model": model_text, "known": known},
                )
        count = None
        if count_text:
            try:
                count = int(count_text)
            except ValueError:
                count = -1
            if not 0 <= count <= MAX_CARDS_PER_NODE:
                problem(
                    line,
                    "card_count",
                    _("A whole number from 0 to %(max)s.") % {"max": MAX_CARDS_PER_NODE},
                )
        placement = Placement(supernode or DEFAULT_SUPERNODE, rack) if rack else None
        rows.append(_Row(line, hostname, placement, model, count))
    if problems:
        raise InventoryImportError(sorted(problems, key=lambda p: (p.line, p.field)))
    return rows


def _apply(cluster: Cluster, rows: list[_Row], *, dry_run: bool) -> ImportReport:
    report = ImportReport(dry_run=dry_run)
    hosts = {row.hostname for row in rows}
    before = {
        n.hostname: (n.rack_id, n.hardware_model_id, n.cards_expected)
        for n in Node.objects.filter(cluster=cluster, hostname__in=hosts)
    }
    racks_before = _count_racks(cluster)
    supernodes_before = cluster.supernodes.count()
    nodes = nodes_ensure(
        cluster=cluster,
        hosts=hosts,
        placements={row.hostname: row.placement for row in rows if row.placement},
    )
    changed = []
    for row in rows:
        node = nodes[row.hostname]
        dirty = False
        if row.model is not None and node.hardware_model_id != row.model.pk:
            node.hardware_model = row.model
            dirty = True
        if row.count is not None and node.cards_expected != row.count:
            node.cards_expected = row.count
            dirty = True
        if dirty:
            changed.append(node)
    if changed:
        nodes_update_grouped(
            nodes=changed,
            values=lambda n: {
                "hardware_model": n.hardware_model,
                "cards_expected": n.cards_expected,
            },
        )
    by_model: dict[int, list[int]] = {}
    for row in rows:
        if row.model is not None:
            by_model.setdefault(row.model.pk, []).append(nodes[row.hostname].pk)
    for model_id, node_ids in by_model.items():
        # Cards registered before the node had a model take it; a card's own model stays.
        report.cards_updated += Accelerator.objects.filter(
            node_id__in=node_ids, hardware_model__isnull=True
        ).update(hardware_model_id=model_id)
    for row in rows:
        node = nodes[row.hostname]
        after = (node.rack_id, node.hardware_model_id, node.cards_expected)
        if row.hostname not in before:
            report.created += 1
        elif before[row.hostname] != after:
            report.updated += 1
        else:
            report.unchanged += 1
    report.racks_created = _count_racks(cluster) - racks_before
    report.supernodes_created = cluster.supernodes.count() - supernodes_before
    return report


def _count_racks(cluster: Cluster) -> int:
    return Rack.objects.filter(supernode__cluster=cluster).count()
