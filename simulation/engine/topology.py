"""Index arrays for the card hierarchy and stable entity keys.

Cards are numbered 0..n-1 in topology order (supernode, rack, node, card), so index arithmetic
gives every parent; the last supernode, rack or node may be partial. Keys are stable strings:
``sn0`` (supernode), ``sn0/r3`` (rack), ``sn0/r3/n10`` (node, numbered within its supernode),
``sn0/r3/n10/c5`` (card within node), ``sn0/r3/up1`` (rack uplink).
"""

from __future__ import annotations

import numpy as np

from .scenario.types import Topology


class TopologyIndex:
    """Vectorised parent lookups (card -> node/rack/supernode) and key builders."""

    MEMO_FIELDS = ("_card_keys",)  # built on first use; not state (a world is shared on load)

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        n = topo.cards
        self.n_cards = n
        cpn = topo.cards_per_node
        cpr = cpn * topo.nodes_per_rack
        cps = topo.cards_per_supernode
        idx = np.arange(n, dtype=np.int64)
        self.card_node = (idx // cpn).astype(np.int32)
        self.card_rack = (idx // cpr).astype(np.int32)
        self.card_sn = (idx // cps).astype(np.int32)
        self.n_nodes = int(self.card_node[-1]) + 1
        self.n_racks = int(self.card_rack[-1]) + 1
        self.n_supernodes = int(self.card_sn[-1]) + 1
        self.rack_sn = (np.arange(self.n_racks) // topo.racks_per_supernode).astype(np.int32)
        self.node_rack = (np.arange(self.n_nodes) // topo.nodes_per_rack).astype(np.int32)
        self.n_links = self.n_racks * topo.uplinks_per_rack
        self.link_rack = np.repeat(np.arange(self.n_racks, dtype=np.int32), topo.uplinks_per_rack)
        self.cards_per_sn = np.bincount(self.card_sn, minlength=self.n_supernodes)
        self.cards_per_rack = np.bincount(self.card_rack, minlength=self.n_racks)
        self.nodes_per_sn = np.bincount(
            self.node_rack // topo.racks_per_supernode, minlength=self.n_supernodes
        )
        self._card_keys: list[str] | None = None

    # -- keys -----------------------------------------------------------------------
    def supernode_key(self, s: int) -> str:
        """Key of supernode ``s``."""
        return f"sn{s}"

    def rack_key(self, r: int) -> str:
        """Key of global rack ``r``."""
        return f"sn{r // self.topo.racks_per_supernode}/r{r % self.topo.racks_per_supernode}"

    def node_key(self, nd: int) -> str:
        """Key of global node ``nd`` (node number counted within its supernode)."""
        npsn = self.topo.nodes_per_rack * self.topo.racks_per_supernode
        return f"{self.rack_key(nd // self.topo.nodes_per_rack)}/n{nd % npsn}"

    def card_keys(self) -> list[str]:
        """Keys of all cards (built once, cached)."""
        if self._card_keys is None:
            cpn = self.topo.cards_per_node
            node_keys = [self.node_key(nd) for nd in range(self.n_nodes)]
            self._card_keys = [f"{node_keys[i // cpn]}/c{i % cpn}" for i in range(self.n_cards)]
        return self._card_keys

    def link_keys(self) -> list[str]:
        """Keys of all rack uplinks."""
        u = self.topo.uplinks_per_rack
        return [f"{self.rack_key(i // u)}/up{i % u}" for i in range(self.n_links)]

    def listing(self) -> dict[str, list[dict]]:
        """Inventory for the portal: supernodes, racks, nodes, cards and links with parents."""
        hw = self.topo.hardware
        return {
            "supernodes": [
                {"key": self.supernode_key(s), "cards": int(self.cards_per_sn[s])}
                for s in range(self.n_supernodes)
            ],
            "racks": [
                {"key": self.rack_key(r), "supernode": self.supernode_key(int(self.rack_sn[r]))}
                for r in range(self.n_racks)
            ],
            "nodes": [
                {"key": self.node_key(nd), "rack": self.rack_key(int(self.node_rack[nd]))}
                for nd in range(self.n_nodes)
            ],
            "cards": [
                {"key": k, "node": k.rsplit("/", 1)[0], "hardware": hw} for k in self.card_keys()
            ],
            "links": [{"key": k, "rack": k.rsplit("/", 1)[0]} for k in self.link_keys()],
        }
