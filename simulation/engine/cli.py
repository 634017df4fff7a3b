"""Command line: ``python -m simulation.engine {compare,perf,kvcache,validate,model} ...``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from . import train_cli
from .ablation import run_ablation
from .catalog import HARDWARE, MODELS
from .compare import (
    build_compare_scenario,
    describe_training_trace,
    load_training_trace,
    run_compare,
)
from .headline import describe as describe_headline
from .memory.replay import replay_blocks
from .perf.operating import perf_point
from .perf.profiles import CHOICES as PROFILE_CHOICES
from .spread import combine, fmt_spread, fmt_value
from .traces import read_mooncake

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


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {v}")
    return v


def _nonneg_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def _trace(kind: str):
    def parse(text: str) -> Path:
        prefix, sep, file = text.partition(":")
        if not sep or prefix != kind or not file:
            raise argparse.ArgumentTypeError(f"expected {kind}:FILE, got {text!r}")
        p = Path(file)
        if not p.is_file():
            raise argparse.ArgumentTypeError(f"no such file: {file}")
        return p

    return parse


def _inference_trace(text: str) -> tuple[str, Path]:
    kind, sep, file = text.partition(":")
    if not sep or kind not in ("azure", "mooncake") or not file:
        raise argparse.ArgumentTypeError(f"expected azure:FILE or mooncake:FILE, got {text!r}")
    p = Path(file)
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {file}")
    return kind, p


def _offset(text: str) -> float:
    """Seconds, or a number with unit s/m/h/d (``--start 6h``)."""
    unit = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    t = text.strip().lower()
    mult = unit.get(t[-1:], None)
    try:
        v = float(t[:-1] if mult else t) * (mult or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or N[s|m|h|d], got {text!r}") from None
    if v < 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite offset >= 0, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (exposed for tests and docs)."""
    ap = argparse.ArgumentParser(
        prog="python -m simulation.engine", description="Cluster Portal digital twin"
    )
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="split vs unified on the same workload")
    c.add_argument("--cards", type=_positive_int, default=10240)
    c.add_argument("--hours", type=_positive_float, default=24.0)
    c.add_argument("--seed", type=_nonneg_int, default=7)
    c.add_argument(
        "--seeds",
        type=_positive_int,
        default=3,
        help="run seeds SEED..SEED+N-1; figures are mean [min, max] with a 95%% CI in JSON",
    )
    c.add_argument("--inference-trace", type=_inference_trace, metavar="azure:FILE|mooncake:FILE")
    c.add_argument("--rate-scale", type=_positive_float, default=1.0, help="replay speed-up")
    c.add_argument(
        "--start",
        metavar="OFFSET",
        help="offset into the trace(s): seconds or N[smhd]; a date for training traces",
    )
    c.add_argument("--loop", action="store_true", help="repeat the trace past its end")
    c.add_argument(
        "--trace-model",
        choices=sorted(MODELS),
        default=None,
        help="model serving the replay (default: llama-2-70b if the trace fits its window, "
        "else the catalog model with the smallest window that fits)",
    )
    c.add_argument(
        "--truncate-prompts",
        action="store_true",
        help="cut requests longer than the model's window (refused without this)",
    )
    c.add_argument("--training-trace", type=_trace("philly"), metavar="philly:FILE")
    c.add_argument(
        "--training-demand",
        choices=("cluster-traces", "legacy"),
        default="cluster-traces",
        help="training arrivals fitted to public cluster traces (default) or the legacy mix",
    )
    c.add_argument(
        "--perf-profile",
        choices=PROFILE_CHOICES,
        default="current",
        help="serving-stack constants of the perf model (current = the part's 2024+ stack)",
    )
    c.add_argument(
        "--inference-demand",
        choices=("fleet", "legacy"),
        default="fleet",
        help="inference fitted to public fleet duty cycles (default) or the legacy mix",
    )
    c.add_argument("--json", metavar="FILE", help="write JSON results ('-' = stdout)")
    c.add_argument("--serial", action="store_true", help="run the two policies one by one")
    c.add_argument(
        "--ablate",
        action="store_true",
        help="also run split -> +time-sharing -> +preemption/elastic -> +pooled memory -> unified",
    )
    p = sub.add_parser("perf", help="prefill and decode time of one replica")
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--hardware", choices=sorted(HARDWARE), required=True)
    p.add_argument("--tp", type=_positive_int, default=8)
    p.add_argument("--batch", type=_positive_int, default=1)
    p.add_argument("--prompt-tokens", type=_positive_int, default=2048)
    p.add_argument("--output-tokens", type=_positive_int, default=256)
    p.add_argument("--ep", type=_positive_int, default=1, help="expert-parallel cards")
    p.add_argument("--dtype", choices=("bf16", "fp8", "int8"), default="bf16")
    p.add_argument(
        "--profile",
        choices=PROFILE_CHOICES,
        default="current",
        help="serving-stack constants (current = the 2024+ stack for the hardware)",
    )
    p.add_argument("--tpot-target-ms", type=_positive_float, default=None)
    p.add_argument("--json", metavar="FILE")
    v = sub.add_parser("validate", help="model error on public measurements + tail check")
    v.add_argument("--refit", action="store_true", help="refit the global constants first")
    v.add_argument("--no-tails", action="store_true", help="skip the DES tail check")
    v.add_argument("--json", metavar="FILE")
    md = sub.add_parser("model", help="model catalog (day-0 adaptation)")
    msub = md.add_subparsers(dest="model_command", required=True)
    ma = msub.add_parser("add", help="add a model from a Hugging Face config.json")
    ma.add_argument("config", type=Path)
    ma.add_argument("--id", dest="model_id", help="catalog id (default: config file's folder)")
    ma.add_argument("--catalog", type=Path, help="user catalog file (default: env / ./var)")
    msub.add_parser("list", help="list catalog models")
    k = sub.add_parser("kvcache", help="replay a Mooncake trace through a prefix cache")
    k.add_argument("--trace", type=_trace("mooncake"), required=True, metavar="mooncake:FILE")
    k.add_argument("--capacity-blocks", type=_nonneg_int, required=True)
    k.add_argument("--policy", choices=("lru", "lru-k"), default="lru-k")
    k.add_argument("--json", metavar="FILE")
    train_cli.add_parser(sub)
    return ap


def _emit_json(obj: dict, dest: str | None) -> None:
    if dest is None:
        return
    text = json.dumps(obj, indent=2, sort_keys=True)
    if dest == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(dest).write_text(text + "\n", encoding="utf-8")


class _Bar:
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


def _table(res: dict) -> str:
    """Split vs unified; with several seeds each cell is ``mean [min, max]`` over the seeds
    and a last column gives the paired unified - split difference the same way."""
    sp = res.get("spread")
    n = len(res.get("seeds", [1]))
    if not sp or n <= 1:
        lines = [f"{'metric':<28}{'split':>16}{'unified':>16}"]
        lines.append("-" * 60)
        for key, label, fmt in COMPARE_ROWS:
            a, b = (fmt_value(res[p][key], fmt) for p in ("split", "unified"))
            lines.append(f"{label:<28}{a:>16}{b:>16}")
        return "\n".join(lines)
    w = 30
    head = f"{'metric':<28}{'split':>{w}}{'unified':>{w}}{'unified - split':>{w}}"
    lines = [f"{n} seeds {res['seeds'][0]}..{res['seeds'][-1]}: mean [min, max]", head]
    lines.append("-" * len(head))
    diff = sp.get("unified_minus_split", {})
    for key, label, fmt in COMPARE_ROWS:
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


def _default_model_id(config: Path) -> str:
    name = config.parent.name if config.name == "config.json" else config.stem
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name.lower()) or "model"


def _print_trace_summary(kind: str, path: Path, args, start_s: float) -> None:
    from .replay import load_trace, trace_summary, window

    full, reuse = load_trace(kind, path)
    if full.t.size == 0:
        raise ValueError(f"{path}: trace has no requests")
    tr = window(full, start_s, args.hours * 3600.0, args.rate_scale, args.loop)
    s = trace_summary(tr if tr.t.size else full)
    out = sys.stderr if args.json == "-" else sys.stdout
    out.write(
        f"replay {kind}:{path} (start {start_s:g} s, rate x{args.rate_scale:g}"
        f"{', loop' if args.loop else ''}): {s['requests']:,} requests, mean rate "
        f"{s['mean_rate_rps']:.3g} req/s, inter-arrival CV {s['interarrival_cv']:.2f}, input "
        f"tokens P50 {s['input_tokens_p50']:.0f} / P99 {s['input_tokens_p99']:.0f}, output "
        f"tokens P50 {s['output_tokens_p50']:.0f} / P99 {s['output_tokens_p99']:.0f}"
        + (f", prefix block reuse {reuse:.1%}" if reuse is not None else "")
        + "\n"
    )
    out.flush()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.command == "compare":
        if args.cards < 64:
            ap.error("--cards: must be >= 64")
        try:
            kind, tpath = args.inference_trace or ("azure", None)
            inference_start_s = 0.0
            if tpath is not None:
                try:
                    inference_start_s = _offset(args.start) if args.start else 0.0
                except argparse.ArgumentTypeError as exc:
                    raise ValueError(
                        f"--start: {exc} (dates work for training traces only)"
                    ) from None
                _print_trace_summary(kind, tpath, args, inference_start_s)
            scen = build_compare_scenario(
                args.cards,
                args.hours,
                args.seed,
                tpath,
                args.training_trace,
                start=args.start,
                trace_kind=kind,
                rate_scale=args.rate_scale,
                start_s=inference_start_s,
                loop=args.loop,
                trace_model=args.trace_model,
                truncate=args.truncate_prompts,
                training_demand=args.training_demand,
                inference_demand=args.inference_demand,
            )
            scen = dataclasses.replace(scen, perf_profile=args.perf_profile)
            trace_note = None
            if args.training_trace is not None:
                trace_note = describe_training_trace(
                    load_training_trace(args.training_trace, args.hours * 3600.0, args.start)[1]
                )
        except ValueError as exc:
            ap.error(str(exc))
        out = sys.stderr if args.json == "-" else sys.stdout
        if trace_note:
            out.write(trace_note + "\n")
            out.flush()
        runs = {
            args.seed: run_compare(
                scen, args.hours, _Bar("simulating"), parallel=False if args.serial else None
            )
        }
        for seed in range(args.seed + 1, args.seed + args.seeds):
            other = build_compare_scenario(
                args.cards,
                args.hours,
                seed,
                tpath,
                args.training_trace,
                start=args.start,
                trace_kind=kind,
                rate_scale=args.rate_scale,
                start_s=inference_start_s,
                loop=args.loop,
                trace_model=args.trace_model,
                truncate=args.truncate_prompts,
                training_demand=args.training_demand,
                inference_demand=args.inference_demand,
            )
            other = dataclasses.replace(other, perf_profile=args.perf_profile)
            runs[seed] = run_compare(
                other, args.hours, _Bar(f"seed {seed}"), parallel=False if args.serial else None
            )
        res = combine(runs)
        out.write("\n".join([*describe_headline(res.get("headline")), _table(res)]) + "\n")
        if args.ablate:
            rows = run_ablation(
                scen, args.hours, _Bar("ablation"), parallel=False if args.serial else None
            )
            out.write(ablation_table(rows) + "\n")
            res = {**res, "ablation": rows}
        _emit_json(res, args.json)
    elif args.command == "train":
        try:
            res = train_cli.run(args)
        except ValueError as exc:
            ap.error(str(exc))
        if args.json is None:
            print(train_cli.describe(res))
        _emit_json(res, args.json)
    elif args.command == "perf":
        try:
            res = perf_point(
                args.model,
                args.hardware,
                args.tp,
                args.batch,
                args.prompt_tokens,
                ep=args.ep,
                dtype=args.dtype,
                output_tokens=args.output_tokens,
                tpot_target_ms=args.tpot_target_ms,
                profile=args.profile,
            )
        except ValueError as exc:
            ap.error(str(exc))
        if args.json is None:
            print(f"profile {res['profile']}")
            print(
                f"prefill {res['prefill_ms']:.1f} ms, decode {res['decode_ms_per_token']:.2f}"
                f" ms/token; TTFT {res['ttft_ms']:.1f} ms, TPOT {res['tpot_ms']:.2f} ms"
            )
            if res["mtp_tokens_per_step"] > 1:
                print(
                    f"  MTP: a {res['decode_step_ms']:.2f} ms step keeps "
                    f"{res['mtp_tokens_per_step']:g} tokens per sequence"
                )
            for phase in ("prefill_ms", "decode_ms"):
                parts = ", ".join(f"{k} {v:.2f}" for k, v in res["breakdown"][phase].items())
                print(f"  {phase[:-3]} breakdown (ms): {parts}")
            print(
                f"  prefill {res['prefill_tokens_per_s_per_card']:,.0f} tokens/s/card, decode "
                f"{res['decode_tokens_per_s_per_card']:,.0f} tokens/s/card"
                + (
                    f" (batch {res['decode_batch_at_target']} at TPOT <= "
                    f"{res['tpot_target_ms']:g} ms)"
                    if "tpot_target_ms" in res
                    else ""
                )
            )
        _emit_json(res, args.json)
    elif args.command == "validate":
        from .validate import run as run_validate

        res = run_validate(refit=args.refit, tails=not args.no_tails)
        _emit_json(res, args.json)
    elif args.command == "model":
        from .catalog import MODELS as CATALOG
        from .models_hf import add_user_model, model_from_hf_config

        if args.model_command == "list":
            for mid in sorted(CATALOG):
                m = CATALOG[mid]
                print(
                    f"{mid:<20} {m.params / 1e9:8.1f}B total {m.active / 1e9:7.1f}B active "
                    f"{m.attention_type:<4} {m.kv_bytes_per_token / 1024:7.1f} KiB KV/token "
                    f"{m.source}"
                )
            return 0
        try:
            cfg = json.loads(args.config.read_text(encoding="utf-8"))
        except FileNotFoundError:
            ap.error(f"config: no such file: {args.config}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            ap.error(f"config: {args.config}: not valid JSON ({exc})")
        mid = args.model_id or _default_model_id(args.config)
        try:
            spec = model_from_hf_config(cfg, model_id=mid)
            where = add_user_model(spec, args.catalog)
        except ValueError as exc:
            ap.error(str(exc))
        print(
            f"added {spec.id}: {spec.params / 1e9:.1f}B params ({spec.active / 1e9:.1f}B active),"
            f" {spec.layers} layers, {spec.attention_type}, "
            f"{spec.kv_bytes_per_token / 1024:.1f} KiB KV/token -> {where}"
        )
    else:
        try:
            reqs = read_mooncake(args.trace)
        except ValueError as exc:
            ap.error(str(exc))
        res = replay_blocks(reqs, args.capacity_blocks, args.policy)
        if args.json is None:
            print(f"hit ratio {res['hit_ratio']:.3f}, evictions {res['evictions']}")
        _emit_json(res, args.json)
    return 0
