"""The READMEs' validation tables, rendered from what ``validate`` returns (issue 35 item 8).

Every figure in a table of the engine README's "Validation" sections (and the repo README's
fidelity summary) comes from :func:`render` applied to ``validate.run``'s result, so the
tables cannot drift from what ``validate`` prints: ``python -m simulation.engine validate
--write-readme`` rewrites each block between ``<!-- validate:NAME -->`` and
``<!-- /validate:NAME -->`` in place (:func:`write_readmes`). The perf tables are cheap to
recompute and ``tests/engine/test_validate_tables.py`` checks the committed blocks against
them; the demand and fleet tables take the whole run (~30 s) and are rewritten with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from .calibration import current as cur

ENGINE_README = Path(__file__).with_name("README.md")
REPO_README = Path(__file__).resolve().parents[2] / "README.md"

# Short labels of the sources ``validate_current`` quotes in full.
_SOURCE_LABELS = {
    cur.CLOUDMATRIX_SOURCE: "CloudMatrix384",
    cur.DEEPSEEK_SERVING_SOURCE: "DeepSeek overview",
    cur.SGLANG_SOURCE: "SGLang / LMSYS",
    cur.MEGATRON_SOURCE: "Megatron-Bridge perf summary",
    cur.DEEPSEEK_TRAINING_SOURCE: "DeepSeek-V3 report",
}


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def splitwise_table(res: dict) -> str:
    """Median |error| of the Splitwise rows (``splitwise-2023``) per split, bucket, part."""
    a, c, v = res["all"], res["calibration"], res["validation"]
    buckets = ("batch_1_1", "batch_2_4", "batch_8_16", "batch_32_64")
    rows = [
        (
            "all",
            f"{_pct(a['prefill']['median_abs'])} ({a['prefill']['median_signed']:+.1%}, "
            f"{a['prefill']['share_over']:.0%} over)",
            f"{_pct(a['decode']['median_abs'])} ({a['decode']['median_signed']:+.1%}, "
            f"{a['decode']['share_over']:.0%} over)",
        ),
        ("calibration half", _pct(c["prefill"]["median_abs"]), _pct(c["decode"]["median_abs"])),
        (
            "validation half (not fitted)",
            _pct(v["prefill"]["median_abs"]),
            _pct(v["decode"]["median_abs"]),
        ),
        (
            "batch 1 / 2–4 / 8–16 / 32–64 (all)",
            " / ".join(_pct(a["prefill"][k]) for k in buckets),
            " / ".join(_pct(a["decode"][k]) for k in buckets),
        ),
        (
            "A100 / H100",
            f"{_pct(a['prefill']['a100-sxm'])} / {_pct(a['prefill']['h100-sxm'])}",
            f"{_pct(a['decode']['a100-sxm'])} / {_pct(a['decode']['h100-sxm'])}",
        ),
        (
            "Llama-2-70B / BLOOM-176B",
            f"{_pct(a['prefill']['llama-2-70b'])} / {_pct(a['prefill']['bloom-176b'])}",
            f"{_pct(a['decode']['llama-2-70b'])} / {_pct(a['decode']['bloom-176b'])}",
        ),
    ]
    dp = res.get("design_point")
    if dp:
        rows.append(
            (
                "DESIGN.md point (H100 TP8, 2,048 tokens)",
                f"{dp['prefill_ms']:.1f} ms vs {dp['prefill_published_ms']:.0f}",
                f"{dp['decode_ms']:.2f} ms vs {dp['decode_published_ms']:.0f}",
            )
        )
    return _table(("set", "prefill", "decode"), rows)


_TRTLLM_GROUPS: tuple[tuple[str, str, Callable[[dict], bool]], ...] = (
    (
        "Llama 3.1 8B TP1 + Llama 3.3 70B TP2, every other row",
        "fitted",
        lambda r: r["role"] == "cal",
    ),
    (
        "the other rows of those two models",
        "held out",
        lambda r: r["role"] == "val" and r["model"] in ("llama-3-8b", "llama-3-70b"),
    ),
    ("Llama 3.1 405B TP8", "held out", lambda r: r["model"] == "llama-3-405b"),
    ("Qwen3-235B-A22B (MoE) TP8 EP8", "held out", lambda r: r["model"] == "qwen3-235b-a22b"),
    ("all held-out rows", "held out", lambda r: r["role"] == "val"),
)


def trtllm_groups(rows: list[dict]) -> list[dict]:
    """The TensorRT-LLM rows grouped (fitted, held-out dense, 405B, Qwen3 MoE, all held out):
    rows, median |log ratio| and ratio range of each; ``validate`` prints them too."""
    out = []
    for label, role, pick in _TRTLLM_GROUPS:
        sel = [r for r in rows if pick(r)]
        if not sel:
            continue
        logs = sorted(abs(math.log(r["ratio"])) for r in sel)
        n = len(logs)
        out.append(
            {
                "label": label,
                "role": role,
                "rows": n,
                "median_abs_log": (logs[(n - 1) // 2] + logs[n // 2]) / 2.0,
                "ratio_min": min(r["ratio"] for r in sel),
                "ratio_max": max(r["ratio"] for r in sel),
            }
        )
    return out


def trtllm_table(current: dict) -> str:
    """TensorRT-LLM H100 rows (``trtllm-2025``) grouped: median |log ratio| and range."""
    rows = [
        (
            f"{g['label']} ({g['rows']})",
            g["role"],
            f"{g['median_abs_log']:.3f}",
            f"{g['ratio_min']:.2f}–{g['ratio_max']:.2f}",
        )
        for g in trtllm_groups(current["throughput"])
    ]
    return _table(("rows", "role", "median \\|log ratio\\|", "ratio range"), rows)


def moe_table(current: dict) -> str:
    """MoE serving and training checks: published vs twin with its role."""
    rows = []
    for c in current["moe"]:
        note = c.get("note", "")
        batch = note.split(",")[0] if note.startswith("batch") else ""
        twin = f"{c['twin']:,.0f}" + (f" ({batch})" if batch else "")
        rows.append(
            (
                c["name"],
                _SOURCE_LABELS.get(c["source"], c["source"]),
                c["role"],
                f"{c['published']:,.0f} {c['unit']}",
                twin,
                f"{c['ratio']:.2f}",
            )
        )
    return _table(("figure", "source", "role", "published", "twin", "ratio"), rows)


def operators_table(current: dict) -> str:
    """CloudMatrix-Infer's per-operator figures vs the twin."""
    rows = [
        (
            c["name"],
            c["role"],
            f"{c['published']:,.1f} {c['unit']}",
            f"{c['twin']:,.1f} {c['unit']}",
            f"{c['ratio']:.2f}",
        )
        for c in current["operators"]
    ]
    return _table(("figure", "role", "published", "twin", "ratio"), rows)


def small_batch_table(small: dict) -> str:
    """Single-request TTFT / ITL per hardware profile."""
    rows = []
    for r in small["rows"]:
        pub = f"{r['ttft_published_ms']:.1f} ms"
        twin = f"{r['ttft_ms']:.1f} ms ×{r['ttft_ratio']:.2f}"
        if r.get("itl_ratio"):
            pub += f", {r['itl_published_ms']:.2f} ms"
            twin += f", {r['itl_ms']:.2f} ms ×{r['itl_ratio']:.2f}"
        what = f"{r['model']}, {r['hardware']} TP{r['tp']} {r['dtype']}, {r['isl']} / {r['osl']}"
        rows.append((what, f"`{r['profile']}`", r["role"], pub, twin))
    s = small["a100_splitwise_validation"]
    rows.append(
        (
            "Splitwise's A100 validation rows (kernels of `a100-2025`, overheads of "
            "`splitwise-2023`)",
            "—",
            "not fitted",
            "—",
            f"median error prefill {_pct(s['prefill']['median_abs'])}, decode "
            f"{_pct(s['decode']['median_abs'])}",
        )
    )
    return _table(("single request", "profile", "role", "published", "twin"), rows)


def training_demand_table(demand: dict) -> str:
    """The training-demand statistics (fitted targets of ``demand.fit``) with seed ranges."""
    fmt = {
        "median_run_s": ("median run time", "{:.0f} s"),
        "mean_cards_per_job": ("mean cards per job", "{:.2f}"),
        "single_card_share": ("single-card jobs", "{:.1%}"),
        "iod_10min": ("10-minute index of dispersion (within each hour)", "{:.1f}"),
        "hourly_peak_trough": ("hourly submissions peak/trough", "{:.2f}"),
    }
    rows = []
    for key, (label, f) in fmt.items():
        d = demand[key]
        twin = f"{f.format(d['twin'])} [{f.format(d['min'])}, {f.format(d['max'])}]"
        rows.append((label, d["role"], twin, f.format(d["source"])))
    return _table(("statistic", "role", "twin [per-seed range]", "source figure"), rows)


_HELD_OUT = (
    (
        "queue_wait_s_mean",
        "mean training queue wait, split, 2,048 cards, 24 h, default scenario",
        "~860 s (Philly / Helios)",
        "training-demand fit + the load assumption",
    ),
    (
        "pai_gpu_util_mean",
        "mean GPU utilisation",
        "0.105 (Alibaba PAI 2020, training + inference)",
        "the fleet duty-cycle fit (fitted on the GenAI trace)",
    ),
)


def held_out_table(held: dict) -> str:
    """The checks no fit saw (each from another trace than the fit it checks)."""
    rows = []
    for key, label, source, checks in _HELD_OUT:
        if key in held:
            h = held[key]
            twin = f"{h['twin']:,.0f} s" if key.endswith("_s_mean") else f"{h['twin']:.3f}"
            rows.append((label, f"{twin} (×{h['twin'] / h['source']:.2f})", source, checks))
    return _table(("check", "twin", "source", "checks"), rows)


def fleet_table(fleet: dict) -> str:
    """Inference-fleet duty cycle (fitted) with its same-trace and other-trace checks."""
    d, idle, pai = fleet["duty_cycle_mean"], fleet["idle_time_share"], fleet["pai_gpu_util_mean"]
    eva = fleet["engine_vs_analytic"]
    rows = [
        (
            "mean duty cycle, static provisioning (fitted)",
            f"{d['twin']:.3f} [{d['min']:.3f}, {d['max']:.3f}]",
            f"{d['source']:.3f} (GenAI trace)",
        ),
        (
            "30-s samples at 0 % (same trace, not fitted)",
            f"{idle['twin']:.3f} (×{idle['twin'] / idle['source']:.2f})",
            f"{idle['source']:.3f}",
        ),
        (
            "PAI mean GPU utilisation (held out: another trace)",
            f"{pai['twin']:.3f}",
            f"{pai['source']:.3f} (training + inference)",
        ),
        (
            "duty with replicas following demand (unified-like)",
            f"{fleet['follow_demand_duty']:.3f}",
            "—",
        ),
        (
            "engine vs analytic duty (2,048 cards, split, 24 h)",
            f"{eva['engine']:.4f} vs {eva['analytic']:.4f}",
            "consistency",
        ),
    ]
    return _table(("statistic", "twin", "source"), rows)


def tail_table(tail: dict) -> str:
    """Analytic P99 error against the DES per servers x arrival CV (columns: load)."""
    rows = tail["rows"]
    rhos = sorted({r["rho"] for r in rows})
    keys = sorted({(r["servers"], r["cv"]) for r in rows})
    err = {(r["servers"], r["cv"], r["rho"]): r["error"] for r in rows}
    body = [
        (f"c = {c}, CV {cv:g}", *(f"{err[(c, cv, rho)]:+.1%}" for rho in rhos)) for c, cv in keys
    ]
    body.append(
        (
            f"median \\|error\\| {tail['median_abs']:.1%}, max {tail['max_abs']:.1%}",
            *("" for _ in rhos),
        )
    )
    return _table(("servers, arrivals", *(f"ρ = {rho:g}" for rho in rhos)), body)


def perf_tables(res: dict) -> dict[str, str]:
    """The tables computed from the serving model alone (cheap; tested against the README)."""
    cur_res = res["current"]
    return {
        "splitwise": splitwise_table(res),
        "trtllm": trtllm_table(cur_res),
        "moe": moe_table(cur_res),
        "operators": operators_table(cur_res),
        "small-batch": small_batch_table(res["small_batch"]),
    }


def render(res: dict) -> dict[str, str]:
    """Every README validation table from a ``validate.run`` result (missing parts skipped)."""
    out = perf_tables(res)
    if "training_demand" in res:
        out["training-demand"] = training_demand_table(res["training_demand"])
    if "inference_demand" in res:
        out["fleet"] = fleet_table(res["inference_demand"])
    if "rows" in res.get("tail", {}):
        out["tail"] = tail_table(res["tail"])
    if "held_out" in res:
        out["held-out"] = held_out_table(res["held_out"])
    return out


def _block(name: str) -> re.Pattern:
    n = re.escape(name)
    return re.compile(
        rf"^([ \t]*)(<!-- validate:{n} -->\n)(.*?)(^[ \t]*<!-- /validate:{n} -->)", re.S | re.M
    )


def _dedent(body: str, indent: str) -> str:
    return "\n".join(line[len(indent) :] for line in body.split("\n"))


def blocks(text: str) -> dict[str, str]:
    """The ``validate:NAME`` blocks of a README's text, by name (indentation removed)."""
    names = re.findall(r"<!-- validate:([\w-]+) -->", text)
    return {
        n: _dedent(m.group(3).rstrip("\n"), m.group(1))
        for n in names
        if (m := _block(n).search(text))
    }


def replace_blocks(text: str, tables: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with each block whose name ``tables`` has rewritten (at the block's own
    indentation, so a table inside a list item stays in it); the names rewritten."""
    done = []
    for name, table in tables.items():
        pat = _block(name)
        if pat.search(text):

            def sub(m: re.Match, t: str = table) -> str:
                body = "".join(m.group(1) + line + "\n" for line in t.split("\n"))
                return m.group(1) + m.group(2) + body + m.group(4)

            text = pat.sub(sub, text)
            done.append(name)
    return text, done


def write_readmes(tables: dict[str, str], paths=(ENGINE_README, REPO_README)) -> list[str]:
    """Rewrite the validation blocks of the READMEs in place; returns ``path: name`` written."""
    written = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            continue
        text, done = replace_blocks(path.read_text(encoding="utf-8"), tables)
        path.write_text(text, encoding="utf-8")
        written += [f"{path}: {n}" for n in done]
    return written
