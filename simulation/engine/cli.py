"""Command line: ``python -m simulation.engine {compare,perf,kvcache,validate,model} ...``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from . import train_cli
from .ablation import run_ablation
from .catalog import HARDWARE, MODELS
from .cli_tables import Bar, ablation_table, compare_table, emit_json
from .compare import (
    build_compare_scenario,
    describe_training_trace,
    load_training_trace,
    run_compare_seeds,
)
from .headline import describe as describe_headline
from .memory.replay import replay_blocks
from .perf.operating import perf_point
from .perf.profiles import CHOICES as PROFILE_CHOICES
from .spread import combine
from .traces import read_mooncake


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
    c.add_argument(
        "--trace-replicas",
        type=_positive_int,
        default=None,
        metavar="N",
        help="pin the replay service at N replicas (no autoscaling): a fixed fleet",
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
    p.add_argument(
        "--context-tokens",
        type=_positive_float,
        default=None,
        help="KV context of the decode step (default: prompt + output / 2)",
    )
    p.add_argument("--json", metavar="FILE")
    v = sub.add_parser("validate", help="model error on public measurements + tail check")
    v.add_argument("--refit", action="store_true", help="refit the global constants first")
    v.add_argument("--no-tails", action="store_true", help="skip the DES tail check")
    v.add_argument("--json", metavar="FILE")
    v.add_argument(
        "--write-readme",
        action="store_true",
        help="rewrite the READMEs' validation tables from this run (validate_tables.py)",
    )
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
            scens = {
                seed: dataclasses.replace(
                    build_compare_scenario(
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
                        trace_replicas=args.trace_replicas,
                        training_demand=args.training_demand,
                        inference_demand=args.inference_demand,
                    ),
                    perf_profile=args.perf_profile,
                )
                for seed in range(args.seed, args.seed + args.seeds)
            }
            scen = scens[args.seed]
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
        # Every (seed, policy) run is one task of one process pool (a worker per CPU).
        runs = run_compare_seeds(
            scens, args.hours, Bar("simulating"), parallel=False if args.serial else None
        )
        res = combine(runs)
        out.write("\n".join([*describe_headline(res.get("headline")), compare_table(res)]) + "\n")
        if args.ablate:
            rows = run_ablation(
                scen, args.hours, Bar("ablation"), parallel=False if args.serial else None
            )
            out.write(ablation_table(rows) + "\n")
            res = {**res, "ablation": rows}
        emit_json(res, args.json)
    elif args.command == "train":
        try:
            res = train_cli.run(args)
        except ValueError as exc:
            ap.error(str(exc))
        if args.json is None:
            print(train_cli.describe(res))
        emit_json(res, args.json)
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
                context_tokens=args.context_tokens,
            )
        except ValueError as exc:
            ap.error(str(exc))
        if args.json is None:
            print(f"profile {res['profile']}")
            print(
                f"prefill {res['prefill_ms']:.1f} ms, decode {res['decode_ms_per_token']:.2f}"
                f" ms/token; TTFT {res['ttft_ms']:.1f} ms, TPOT {res['tpot_ms']:.2f} ms"
                f" (decode at {res['decode_context_tokens']:,.0f} tokens of context)"
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
        emit_json(res, args.json)
    elif args.command == "validate":
        from .validate import run as run_validate

        res = run_validate(refit=args.refit, tails=not args.no_tails)
        if args.write_readme:
            from .validate_tables import render, write_readmes

            for name in write_readmes(render(res)):
                print(f"README table rewritten: {name}")
        emit_json(res, args.json)
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
        emit_json(res, args.json)
    return 0
