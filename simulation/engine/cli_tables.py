"""Text output of the command line: the compare and ablation tables, the progress bar, JSON.

Split out of :mod:`.cli` (issue 35 item 8: modules under ~500 lines); the command line itself
is unchanged.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .spread import fmt_spread, fmt_value

COMPARE_ROWS = (
    ("goodput_pflop_per_card_hour", "goodput (PFLOP/card-h)", "{:,.1f}"),
    ("utilization_busy_mean", "busy utilization", "{:.1%}"),
    ("utilization_allocated_mean", "allocated util. (not a gain)", "{:.1%}"),
    ("training_samples_per_s_mean", "training samples/s", "{:,.0f}"),
    ("training_pflops_mean", "training PFLOP/s (useful)", "{:,.0f}"),
    ("mfu_mean", "MFU (running training)", "{:.1%}"),
    ("inference_p50_ms", "inference P50 (ms)", "{:,.0f}"),
    ("inference_p99_ms", "inference P99 (ms)", "{:,.0f}"),
    ("ttft_p99_ms", "TTFT P99 (ms)", "{:,.0f}"),
    # Steady state (issue 35 item 3): requests after the first 20 min (summary.WARMUP_S);
    # a load sweep reads these, the whole-run rows include the start-up.
    ("ttft_p99_ms_steady", "TTFT P99 after 20 min (ms)", "{:,.0f}"),
    ("slo_attainment", "SLO attainment", "{:.2%}"),
    ("core_slo_attainment", "core SLO attainment", "{:.2%}"),
    ("hbm_live_fraction_mean", "HBM live fraction", "{:.1%}"),
    ("kv_hit_ratio", "prefix KV hit ratio", "{:.1%}"),
    ("preemptions", "preemptions", "{:d}"),
    ("queue_wait_h_mean", "mean queue wait (h, started)", "{:.2f}"),
    ("queue_wait_h_mean_all", "mean queue wait (h, all)", "{:.2f}"),
    ("priority_preemptions", "priority preemptions", "{:d}"),
    ("completed_jobs", "completed jobs", "{:d}"),
    ("energy_mwh", "energy (MWh, facility)", "{:,.1f}"),
    # Serving (issue 13): TTFT / TPOT headline latency.
    ("ttft_p50_ms", "TTFT P50 (ms)", "{:,.0f}"),
    ("tpot_p50_ms", "TPOT P50 (ms)", "{:,.1f}"),
    ("tpot_p99_ms", "TPOT P99 (ms)", "{:,.1f}"),
    ("e2e_p99_ms", "end-to-end P99 (ms)", "{:,.0f}"),
    ("inference_requests", "inference requests", "{:,d}"),
    ("inference_timeouts", "inference timeouts", "{:,d}"),
    # Fleet (issue 25 part 3): busy share of the cards held for inference; truncated prompts.
    ("inference_duty_cycle", "inference duty cycle", "{:.1%}"),
    ("inference_cards_mean", "inference cards held", "{:,.0f}"),
    ("prompts_truncated", "prompts truncated", "{:,d}"),
)


def emit_json(obj: dict, dest: str | None) -> None:
    """Write ``obj`` as JSON to the file ``dest`` (``-``: stdout; None: nowhere)."""
    if dest is None:
        return
    text = json.dumps(obj, indent=2, sort_keys=True)
    if dest == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(dest).write_text(text + "\n", encoding="utf-8")


class Bar:
    """A small stderr progress bar (no dependency)."""

    def __init__(self, label: str) -> None:
        self.label, self.t0, self.last = label, time.monotonic(), -1

    def __call__(self, done: int, total: int) -> None:
        pct = int(100 * done / max(total, 1))
        if pct == self.last:
            return
        self.last = pct
        fill = pct // 4
        sys.stderr.write(
            f"\r{self.label} [{'#' * fill}{'.' * (25 - fill)}] {pct:3d}% "
            f"{time.monotonic() - self.t0:5.1f}s"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _rows(res: dict) -> list[tuple[str, str, str]]:
    """The table's rows both policies report (a run shorter than the warm-up has no steady
    figures)."""
    return [r for r in COMPARE_ROWS if all(r[0] in res[p] for p in ("split", "unified"))]


def compare_table(res: dict) -> str:
    """Split vs unified; with several seeds each cell is ``mean [min, max]`` over the seeds
    and a last column gives the paired unified - split difference the same way."""
    sp = res.get("spread")
    n = len(res.get("seeds", [1]))
    if not sp or n <= 1:
        lines = [f"{'metric':<28}{'split':>16}{'unified':>16}"]
        lines.append("-" * 60)
        for key, label, fmt in _rows(res):
            a, b = (fmt_value(res[p][key], fmt) for p in ("split", "unified"))
            lines.append(f"{label:<28}{a:>16}{b:>16}")
        return "\n".join(lines)
    w = 30
    head = f"{'metric':<28}{'split':>{w}}{'unified':>{w}}{'unified - split':>{w}}"
    lines = [f"{n} seeds {res['seeds'][0]}..{res['seeds'][-1]}: mean [min, max]", head]
    lines.append("-" * len(head))
    diff = sp.get("unified_minus_split", {})
    for key, label, fmt in _rows(res):
        cells = [
            fmt_spread(sp[p][key], fmt) if key in sp[p] else fmt_value(res[p][key], fmt)
            for p in ("split", "unified")
        ]
        d = fmt_spread(diff[key], fmt) if key in diff else ""
        lines.append(f"{label:<28}{cells[0]:>{w}}{cells[1]:>{w}}{d:>{w}}")
    return "\n".join(lines)


ABLATION_COLS = (
    ("utilization_allocated_mean", "alloc", "{:.1%}"),
    ("utilization_busy_mean", "busy", "{:.1%}"),
    ("training_samples_per_s_mean", "samples/s", "{:,.0f}"),
    ("training_goodput_pflops", "goodput PF/s", "{:,.0f}"),
    ("mfu_mean", "MFU", "{:.1%}"),
    ("inference_p99_ms", "P99 ms", "{:,.0f}"),
    ("ttft_p99_ms", "TTFT P99", "{:,.0f}"),
    ("tpot_p99_ms", "TPOT P99", "{:,.1f}"),
    ("slo_attainment", "SLO", "{:.2%}"),
    ("energy_mwh", "MWh", "{:,.1f}"),
)


def ablation_table(rows: list[dict]) -> str:
    """The ablation as a text table (columns missing from a summary are skipped)."""
    cols = [c for c in ABLATION_COLS if all(c[0] in r for r in rows)]
    lines = [f"{'mechanism':<22}" + "".join(f"{lab:>13}" for _, lab, _ in cols)]
    lines.append("-" * len(lines[0]))
    for r in rows:
        lines.append(f"{r['name']:<22}" + "".join(f"{fmt.format(r[k]):>13}" for k, _, fmt in cols))
    return "\n".join(lines)
