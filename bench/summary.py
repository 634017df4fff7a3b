"""Regenerate the summary table at the top of BENCHMARKS.md from ``bench/results/*.json``.

Each row quotes a figure measured by one benchmark run (its date and machine are in the
table), the target from the issues, and whether the figure meets it. Detailed sections below
the table are written by hand with each change.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
START, END = "<!-- summary:start -->", "<!-- summary:end -->"


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def rows() -> list[tuple[str, str, str, str, str]]:
    out = []
    if step := load("engine_step"):
        by = {r["cards"]: r for r in step["results"]}
        ms = by[10240]["median_step_ms"]
        growth = by[102400]["median_step_ms"] / ms
        out.append(
            (
                "Twin step, 10,240 cards (median)",
                f"{ms:.1f} ms",
                "≤ 50 ms",
                "yes" if ms <= 50 else "no",
                step["date"],
            )
        )
        out.append(
            (
                "Twin step growth 102,400 / 10,240 cards",
                f"{growth:.1f}×",
                "≤ 12× (issue 35; linear 10×)",
                "yes" if growth <= 12 else "no",
                step["date"],
            )
        )
    if ing := load("ingestion"):
        ratio = ing["ratio_http_to_copy"]
        out.append(
            (
                "HTTP ingestion / raw COPY (10,000-sample batches)",
                f"{ratio:.2f}",
                "≥ 0.4",
                "yes" if ratio >= 0.4 else "no",
                ing["date"],
            )
        )
    if rw := load("remote_write"):
        # What Prometheus sent and the receiver took (stored points also count the derived
        # NVIDIA health point and leave out Prometheus' own `up`/`scrape_*` series).
        rate = round(rw["received_samples"] / (rw["minutes"] * 60))
        lost = (
            rw["prometheus_counters"]["samples_failed"]
            + rw["prometheus_counters"]["samples_dropped"]
        )
        met = rate >= 15000 and lost == 0
        out.append(
            (
                f"Remote-write from Prometheus 2.42, 10,240 cards, {rw['minutes']:.0f} min "
                f"(load avg {rw['load']['loadavg_mean']})",
                f"{rate:,} samples/s received ({rw['stored_samples_per_s']:,} points/s stored), "
                f"{lost:.0f} failed/dropped",
                "≥ 15,000/s, 0 lost",
                "yes" if met else "no",
                rw["date"],
            )
        )
    if dash := load("dashboards"):
        worst = max(dash["endpoints"], key=lambda r: r["p95_ms"])
        out.append(
            (
                f"Dashboard data, server time, worst p95 ({worst['endpoint']})",
                f"{worst['p95_ms']:.0f} ms",
                "≤ 150 ms",
                "yes" if worst["p95_ms"] <= 150 else "no",
                dash["date"],
            )
        )
        for mode, label, target in (
            ("cache_10s", "cache 10 s", 200),
            ("unique_ranges", "unique ranges (cache on)", 500),
            ("cache_0s", "no cache at all", 500),
        ):
            entries = dash.get("concurrent", {}).get(mode)
            if entries:
                worst = max(entries, key=lambda r: r["p95_ms"])
                out.append(
                    (
                        f"Dashboard data, 10 concurrent users, {label}, worst p95",
                        f"{worst['p95_ms']:.0f} ms",
                        f"≤ {target} ms",
                        "yes" if worst["p95_ms"] <= target else "no",
                        dash["date"],
                    )
                )
    if tick := load("tick"):
        s = tick["end_to_end_median_s"]
        out.append(
            (
                "Tick end to end, 10,240 cards, PostgreSQL + Redis (median)",
                f"{s:.2f} s",
                "≤ 0.3 s",
                "yes" if s <= 0.3 else "no",
                tick["date"],
            )
        )
    if persist := load("persist"):
        old = {b["cards"]: b for b in persist.get("baseline") or []}
        for r in persist["results"]:
            share = r["after_over_step"]
            was = old.get(r["cards"], r)["before_over_step"]  # load + save every tick
            out.append(
                (
                    f"Engine state persistence per tick, {r['cards']:,} cards (× one step)",
                    f"{share:.2f}× (was {was:.0f}×)",
                    "≤ 0.25×",
                    "yes" if share <= 0.25 else "no",
                    persist["date"],
                )
            )
    if persist:
        for r in persist["results"]:
            raw = (r["save_ms"] + r["load_ms"]) / r["step_ms"]
            measured = f"{raw:.1f}×"
            if "v3_save_ms" in r:  # the previous format, same state, same run
                v3 = (r["v3_save_ms"] + r["v3_load_ms"]) / r["step_ms"]
                cold = (r["save_ms"] + r["cold_load_ms"]) / r["step_ms"]
                measured += (
                    f" (world cached; {cold:.1f}× with a cold world; format 3 in the same "
                    f"run: {v3:.1f}×; same figures: {'yes' if r['same_figures'] else 'no'})"
                )
            out.append(
                (
                    f"Engine state save + load, {r['cards']:,} cards, raw (× one step)",
                    measured,
                    "≤ 0.25×",
                    "yes" if raw <= 0.25 else "no",
                    persist["date"],
                )
            )
    if cmp := load("compare"):
        wall = cmp["wall_s"]
        if "cpu_s_per_policy_run" in cmp:  # results of the older script
            measured = (
                f"{wall:.0f} s wall at load {cmp['load_average_before']:.0f}; "
                f"{cmp['cpu_s_per_policy_run']:.0f} s CPU per policy run"
            )
        else:
            measured = (
                f"{wall:.0f} s wall (median of {len(cmp['wall_s_runs'])}, load "
                f"{cmp['load_average_before']:.0f} on {cmp['cpus']} CPUs)"
            )
            if "speedup" in cmp:
                cpu = statistics.median(cmp["cpu_s_runs"])
                cpu0 = statistics.median(cmp["baseline_cpu_s_runs"])
                measured += (
                    f"; baseline {cmp['baseline_wall_s']:.0f} s in the same session "
                    f"(wall ×{cmp['speedup']:.2f}, CPU {cpu0:.0f} → {cpu:.0f} s: "
                    f"×{cpu0 / cpu:.2f}), same figures: "
                    f"{'yes' if cmp['same_figures_as_baseline'] else 'no'}"
                )
        out.append(
            (
                f"24 h compare, both policies, {cmp['cards']:,} cards, {cmp['seeds']} seed(s)",
                measured,
                "≤ 60 s",
                "yes" if wall <= 60 else "no",
                cmp["date"],
            )
        )
    if scale := load("scaleout"):
        for load_name, r in scale["loads"].items():
            out.append(
                (
                    f"Scale-out 1 → 2 workers ({load_name})",
                    f"{r['speedup']:.2f}×",
                    "≥ 1.6×",
                    "yes" if r["speedup"] >= 1.6 else "no",
                    scale["date"],
                )
            )
    if mem := load("memory"):
        for key, label in (
            ("web_worker_peak_rss_mib", "web process"),
            ("worker_peak_rss_mib", "Celery worker"),
        ):
            mib = mem[key]
            out.append(
                (
                    f"Peak RSS, {label}, 10,240 cards",
                    f"{mib:.0f} MiB",
                    "≤ 500 MB",
                    "yes" if mib * 1.048576 <= 500 else "no",
                    mem["date"],
                )
            )
    if soak := load("soak"):
        peak = max(soak["peak_rss_mib"].values())
        out.append(
            (
                f"Soak {soak['minutes']:.0f} min, demo twin {soak['cards']:,} cards, "
                "largest RSS of any process",
                f"{peak:.0f} MiB",
                "≤ 500 MB",
                "yes" if peak * 1.048576 <= 500 else "no",
                soak["date"],
            )
        )
        if storage := soak.get("storage"):
            day = storage["estimated_day_mib"]
            out.append(
                (
                    "Demo SQLite file after a day (extrapolated from the soak)",
                    f"{day:,} MiB",
                    "≤ ~1 GB",
                    "yes" if day * 1.048576 <= 1000 else "no",
                    soak["date"],
                )
            )
    return out


def machine() -> str:
    for name in ("tick", "dashboards", "engine_step", "ingestion"):
        if data := load(name):
            m = data["machine"]
            return f"{m['cpus']} CPUs, {m['mem_gib']} GiB RAM, Python {m['python']}"
    return "unknown"


def main() -> None:
    table = [
        START,
        "## Summary (generated by `make bench` from `bench/results/*.json`)",
        "",
        f"Machine: {machine()} (shared and noisy: quote medians, compare ratios from one run).",
        "",
        "| figure | measured | target | met | run |",
        "|---|---:|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows()),
        END,
    ]
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    block = "\n".join(table)
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + block + after
    else:
        head, _, tail = text.partition("\n\n")
        text = f"{head}\n\n{block}\n\n{tail}"
    path.write_text(text)
    print(block)


if __name__ == "__main__":
    main()
