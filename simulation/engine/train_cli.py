"""``python -m simulation.engine train``: MFU and throughput of one training job (a model output).

The fabric is the scenario topology's (``Topology`` defaults: 8-card nodes, 24-card racks,
384-card supernodes, 1:1 in-rack, 2:1 inter-rack, 4:1 inter-supernode, 50 GB/s per card), so
the figure is what the twin would use for that job placed compactly on such a cluster.
"""

from __future__ import annotations

import argparse

from .catalog import HARDWARE, MODELS, get_hardware, get_model
from .perf.train_model import Fabric, shape_of, step_time
from .scenario.types import Topology


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def _int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {v}")
    return v


def add_parser(sub) -> None:
    """Register the ``train`` sub-command."""
    t = sub.add_parser("train", help="MFU / throughput of one training job from the model")
    t.add_argument("--model", choices=sorted(MODELS), required=True)
    t.add_argument("--hardware", choices=sorted(HARDWARE), required=True)
    t.add_argument("--cards", type=_int, required=True)
    t.add_argument("--tp", type=_int, default=8)
    t.add_argument("--pp", type=_int, default=1)
    t.add_argument("--ep", type=_int, default=1)
    t.add_argument("--cp", type=_int, default=1)
    t.add_argument("--seq-len", type=_int, default=8192)
    t.add_argument("--global-batch-tokens", type=_float, default=16e6)
    t.add_argument("--micro-batch", type=_int, default=1)
    t.add_argument(
        "--vpp",
        type=int,
        default=0,
        help="virtual pipeline stages per rank (default 0 = interleaved, ~2 layers per chunk; "
        "1 = plain 1F1B)",
    )
    t.add_argument(
        "--unbalanced-stages",
        action="store_true",
        help="do not rebalance layers for the logits stage (default: rebalanced)",
    )
    t.add_argument("--recompute", choices=("none", "selective", "full"), default="selective")
    t.add_argument("--tp-overlap", type=float, default=0.0)
    t.add_argument("--json", metavar="FILE")


def run(args) -> dict:
    """Compute the figures for parsed ``args`` (``ValueError`` on an impossible layout)."""
    hw = get_hardware(args.hardware)
    model = get_model(args.model)
    topo = Topology(cards=args.cards, hardware=args.hardware)
    res = step_time(
        shape_of(model, model.params),
        hw,
        args.cards,
        args.tp,
        args.pp,
        ep=args.ep,
        cp=args.cp,
        seq_len=args.seq_len,
        global_batch_tokens=args.global_batch_tokens,
        micro_batch=args.micro_batch,
        vpp=args.vpp,
        recompute=args.recompute,
        tp_overlap=args.tp_overlap,
        balance_stages=not args.unbalanced_stages,
        fabric=Fabric.from_topology(topo, hw.id),
    )
    res.update(model=model.id, hardware=hw.id, cards=args.cards, tp=args.tp, pp=args.pp)
    res.update(ep=args.ep, cp=args.cp, seq_len=args.seq_len)
    return res


def describe(res: dict) -> str:
    """One-line human summary."""
    return (
        f"MFU {res['mfu']:.1%}, {res['tokens_per_s']:,.0f} tokens/s, "
        f"{res['samples_per_s']:,.1f} samples/s, comm {res['comm_share']:.1%}, "
        f"bubble {res['bubble_share']:.1%} (dp={res['dp']}, {res['microbatches']} micro-batches)"
    )
