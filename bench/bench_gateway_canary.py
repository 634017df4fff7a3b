"""A canary through a real gateway: share accuracy and requests lost while weights change.

    python bench/bench_gateway_canary.py [--per-step 2000] [--rate 400] [--concurrency 8]

Starts Debian's ``haproxy`` (``/usr/sbin/haproxy``) in front of two OpenAI-compatible test
backends (``tests/inference_servers.py``: ``/v1/completions`` with log-normal latencies,
vLLM-format ``/metrics``), keeps a bounded load generator running on the loopback, and moves
the canary's share 5 → 25 → 50 → 100 % and back to 0 % (a rollback) through the portal's
HAProxy router (``rollout/routers/haproxy.py``: Runtime API, weights read back). For each
step it records the share of requests HAProxy actually served to the canary over the next
``--per-step`` requests that started after the router confirmed, the router call's time, and
every request without a 200 answer across the whole run (weight changes included). Results in
``bench/results/gateway_canary.json``; figures in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-step", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=400.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--steps", default="5,25,50,100,0")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cluster_portal.settings")
    import django

    django.setup()
    from rollout.routers import Desired, HAProxyRouter
    from tests.inference_servers import InferenceBackend, LoadGenerator, lost, share_served
    from tests.servers import HAProxyServer

    baseline, canary = InferenceBackend("baseline"), InferenceBackend("canary")
    with tempfile.TemporaryDirectory() as tmp:
        from django.conf import settings

        settings.ROUTER_SOCKET_DIRS = [tmp]  # the Runtime API socket lives in the temp folder
        proxy = HAProxyServer(Path(tmp), {"baseline": baseline.port, "canary": canary.port}).start()
        router = HAProxyRouter(
            address=proxy.address, backend="llm", source_server="baseline", target_server="canary"
        )
        load = LoadGenerator(
            proxy.url, concurrency=args.concurrency, rate=args.rate, limit=10**7
        ).start()
        steps = []
        try:
            for share in (float(s) for s in args.steps.split(",")):
                started = time.monotonic()
                confirmed = router.set_share(
                    Desired(0, "bench", f"{share:g}%", "chat", "old", "uni", share, "bench")
                )
                call_ms = 1000 * (time.monotonic() - started)
                since = time.monotonic()
                while sum(o.at >= since for o in list(load.outcomes)) < args.per_step:
                    time.sleep(0.05)
                window = [o for o in list(load.outcomes) if o.at >= since][: args.per_step]
                served = share_served(window, "canary")
                steps.append(
                    {
                        "set_share": share,
                        "confirmed_share": confirmed.share,
                        "served_share": round(served, 2),
                        "error_points": round(abs(served - share), 2),
                        "router_call_ms": round(call_ms, 1),
                        "requests": len(window),
                    }
                )
                print(
                    f"set {share:5.1f}%  confirmed {confirmed.share:5.1f}%  served {served:6.2f}% "
                    f"of {len(window)}  (router call {call_ms:.1f} ms)"
                )
        finally:
            outcomes = load.stop()
            proxy.stop()
            baseline.stop()
            canary.stop()
    missing = lost(outcomes)
    print(f"requests {len(outcomes)}, lost {len(missing)}")
    path = write_result(
        "gateway_canary",
        {
            "per_step": args.per_step,
            "rate": args.rate,
            "concurrency": args.concurrency,
            "steps": steps,
            "requests": len(outcomes),
            "lost": len(missing),
            "worst_error_points": max(s["error_points"] for s in steps),
        },
    )
    print(f"wrote {path}")
    return 0 if not missing and all(s["error_points"] <= 5 for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
