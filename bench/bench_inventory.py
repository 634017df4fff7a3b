"""Benchmark: the one inventory service at fleet size, and the inventory import.

Creates 10,240 cards (``--nodes`` 1,280 × ``--cards`` 8) with ``nodes_ensure`` +
``accelerators_ensure`` the way exporter registration does, then ensures the same fleet again
(every row known: what a restarted receiver's first push costs), then imports a CSV placing
every node in a rack with a card model (``inventory_import``), and imports it again
(idempotent: everything unchanged). Prints wall time and query count of each step.

Run: ``python bench/bench_inventory.py [--nodes 1280] [--cards 8] [--keep]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, write_result  # noqa: E402


def measure(label: str, step) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        result = step()
        seconds = time.perf_counter() - start
    print(f"{label:<34} {seconds * 1000:9.1f} ms  {len(queries):5d} queries")
    return {"seconds": round(seconds, 4), "queries": len(queries), "result": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1280)
    parser.add_argument("--cards", type=int, default=8)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    with fresh_postgres("inventory", keep=args.keep) as url:
        django_setup(url)
        from inventory.models import Cluster, Node
        from inventory.services import (
            DeviceSpec,
            accelerators_ensure,
            inventory_import,
            nodes_ensure,
        )

        cluster, _ = Cluster.objects.get_or_create(name="bench-inventory", kind="unified")
        Node.objects.filter(cluster=cluster).delete()
        hosts = [f"gpu-{n:05d}" for n in range(args.nodes)]
        devices = [
            DeviceSpec(host=h, index=c, vendor_id=f"GPU-{h}-{c}")
            for h in hosts
            for c in range(args.cards)
        ]

        def ensure() -> int:
            nodes = nodes_ensure(cluster=cluster, hosts=hosts, registered_by_exporter=True)
            return len(accelerators_ensure(cluster=cluster, devices=devices, nodes=nodes))

        csv = "hostname,rack,supernode,card_model,card_count\n" + "".join(
            f"{h},r{i // 16:03d},sn{i // 256},h100-sxm,{args.cards}\n" for i, h in enumerate(hosts)
        )

        def imported() -> dict:
            return inventory_import(cluster=cluster, text=csv).as_dict()

        figures = {
            "create": measure(f"create {len(devices):,} cards", ensure),
            "again": measure("ensure the same fleet again", ensure),
            "import": measure(f"import {len(hosts):,} nodes (CSV)", imported),
            "import_again": measure("import the same file again", imported),
        }
        assert figures["import_again"]["result"]["nodes"]["unchanged"] == len(hosts)
        path = write_result(
            "inventory", {"nodes": args.nodes, "cards_per_node": args.cards, **figures}
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
