"""Inventory writes: which cluster pages open on (``clusters``) and the one service that
creates supernodes, racks, nodes, cards and links for everyone (``topology``), the
inventory import from a CSV or YAML file (``imports``) and a workload's series selector
(``workloads``)."""

from inventory.services.clusters import ClusterEnsured, cluster_default_set, cluster_ensure
from inventory.services.imports import (
    ImportProblem,
    ImportReport,
    InventoryImportError,
    inventory_import,
)
from inventory.services.topology import (
    DeviceSpec,
    LinkSpec,
    Placement,
    accelerators_ensure,
    accelerators_move,
    accelerators_seen,
    links_ensure,
    nodes_ensure,
    racks_ensure,
    supernodes_ensure,
    topology_mapping_apply,
)
from inventory.services.workloads import workload_selector_set

__all__ = [
    "ClusterEnsured",
    "DeviceSpec",
    "ImportProblem",
    "ImportReport",
    "InventoryImportError",
    "LinkSpec",
    "Placement",
    "accelerators_ensure",
    "accelerators_move",
    "accelerators_seen",
    "cluster_default_set",
    "cluster_ensure",
    "inventory_import",
    "links_ensure",
    "nodes_ensure",
    "racks_ensure",
    "supernodes_ensure",
    "topology_mapping_apply",
    "workload_selector_set",
]
