"""Benchmark: what persisting the twin's engine costs per tick, before and after residency.

At 10,240 and 102,400 cards (default mix scaled like ``bench_engine_step.py``), after one
simulated hour of warm-up, measures in one process: the median engine step, save and load
of the state, and a rebuild (load + replay of ``TWIN_CHECKPOINT_TICKS - 1`` journalled ticks,
the worst case when a worker does not hold the engine). Per tick of one step:

* before (every tick loaded and saved the state): ``load + save``;
* after (engine resident, checkpoint every N ticks): ``save / N`` amortised; a tick on a
  worker without the engine pays the rebuild instead.

Ratios are against the step measured in the same run (the machine is shared and noisy:
compare ratios). Save and load are also measured in the previous format (3: zlib(npz) +
tagged JSON, ``state.dump_v3``) in the same run, and a load is timed both *warm* (the
scenario's static world already built in this process, as on a worker that held the run) and
*cold* (world rebuilt too). Both formats' loaded engines are stepped and must give the
uninterrupted engine's snapshot rows and summary exactly (``same_figures``). Writes
``bench/results/persist.json``. Not a test.

``--baseline DIR`` also measures the engine found under ``DIR`` (e.g. ``git archive`` of an
older commit's ``simulation/engine``) in a child process right after, for a before/after in
one run.

Run from the repository root: ``python bench/bench_persist.py [--repeats 9] [--every 30]
[--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, write_result  # noqa: E402

if "--code" in sys.argv:  # child process measuring another checkout's engine
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])
else:
    sys.path.insert(0, str(ROOT))
from simulation.engine import Engine, default_scenario  # noqa: E402
from simulation.engine import engine as engine_mod  # noqa: E402
from simulation.engine import state as state_mod  # noqa: E402

SIZES = (10240, 102400)


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def bench_size(cards: int, repeats: int, every: int) -> dict:
    jobs = max(200, round(200 * cards / 10240))
    services = max(50, round(50 * cards / 10240))
    eng = Engine(default_scenario(cards, seed=7, n_training_jobs=jobs, n_services=services))
    eng.run_until(3600.0)
    step_ms = _median_ms(eng.step, repeats)
    blob = eng.save_state()
    n = max(3, repeats // 3)
    save_ms = _median_ms(eng.save_state, n)
    Engine.load_state(blob)  # the world of this scenario is now built in this process
    load_ms = _median_ms(lambda: Engine.load_state(blob), n)
    static = getattr(engine_mod, "_STATIC", None)

    def cold_load() -> None:
        if static is not None:
            static.clear()
        Engine.load_state(blob)

    cold_load_ms = _median_ms(cold_load, n)
    extra: dict = {"cold_load_ms": cold_load_ms}
    if hasattr(state_mod, "dump_v3"):  # the previous format, same state, same run
        scen = json.dumps(eng.scenario.to_dict())
        blob3 = state_mod.dump_v3(scen, eng.state)
        extra["v3_save_ms"] = _median_ms(lambda: state_mod.dump_v3(scen, eng.state), n)
        extra["v3_load_ms"] = _median_ms(lambda: Engine.load_state(blob3), n)
        extra["v3_state_bytes"] = len(blob3)
        extra["same_figures"] = _same_figures(eng, [blob, blob3])

    def rebuild() -> None:
        e = Engine.load_state(blob)
        for _ in range(every - 1):
            e.step()

    rebuild_ms = _median_ms(rebuild, 1)
    before = save_ms + load_ms
    after = save_ms / every
    return {
        "cards": cards,
        "training_jobs": jobs,
        "inference_services": services,
        "state_bytes": len(blob),
        "format": blob[6],
        "step_ms": step_ms,
        "save_ms": save_ms,
        "load_ms": load_ms,
        "rebuild_worst_ms": rebuild_ms,
        "persist_per_tick_before_ms": before,
        "persist_per_tick_after_ms": after,
        "before_over_step": before / step_ms,
        "after_over_step": after / step_ms,
        **extra,
    }


def _same_figures(eng: Engine, blobs: list[bytes], steps: int = 6) -> bool:
    """Engines loaded from each blob, stepped beside the original, give its rows exactly."""
    resumed = [Engine.load_state(b) for b in blobs]
    for _ in range(steps):
        want = list(eng.step().rows())
        if any(list(r.step().rows()) != want for r in resumed):
            return False
    return all(r.summary() == eng.summary() for r in resumed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--every", type=int, default=30, help="ticks between checkpoints")
    ap.add_argument("--baseline", help="directory holding an older simulation/engine")
    ap.add_argument("--code", help=argparse.SUPPRESS)
    args = ap.parse_args()
    results = [bench_size(c, args.repeats, args.every) for c in SIZES]
    if args.code:
        print(json.dumps(results))
        return 0
    baseline = None
    if args.baseline:
        child = [sys.executable, __file__, "--code", args.baseline, "--repeats", str(args.repeats)]
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        baseline = json.loads(out.strip().splitlines()[-1])
    print(
        f"{'cards':>8} {'step ms':>8} {'save ms':>8} {'load ms':>8} {'rebuild ms':>10} "
        f"{'before/tick':>12} {'after/tick':>11} {'before/step':>12} {'after/step':>11}"
    )
    for r in results:
        print(
            f"{r['cards']:>8} {r['step_ms']:>8.1f} {r['save_ms']:>8.1f} {r['load_ms']:>8.1f} "
            f"{r['rebuild_worst_ms']:>10.0f} {r['persist_per_tick_before_ms']:>10.1f}ms "
            f"{r['persist_per_tick_after_ms']:>9.1f}ms {r['before_over_step']:>11.1f}x "
            f"{r['after_over_step']:>10.2f}x"
        )
    for r in results:
        if "v3_save_ms" in r:
            print(
                f"{r['cards']:>8} format 3: save {r['v3_save_ms']:.1f} ms, load "
                f"{r['v3_load_ms']:.1f} ms "
                f"({(r['v3_save_ms'] + r['v3_load_ms']) / r['step_ms']:.2f}x the step, "
                f"{r['v3_state_bytes']:,} B); format {r['format']}: save + load "
                f"{(r['save_ms'] + r['load_ms']) / r['step_ms']:.2f}x warm, "
                f"{(r['save_ms'] + r['cold_load_ms']) / r['step_ms']:.2f}x cold "
                f"({r['state_bytes']:,} B); same figures: {r['same_figures']}"
            )
    if baseline:
        print("baseline engine (every tick loads and saves):")
        for b in baseline:
            print(
                f"{b['cards']:>8} step {b['step_ms']:.1f} ms, save {b['save_ms']:.1f} ms, "
                f"load {b['load_ms']:.1f} ms: load + save = {b['before_over_step']:.1f}x the step"
            )
    payload = {"checkpoint_every_ticks": args.every, "results": results, "baseline": baseline}
    path = write_result("persist", payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
