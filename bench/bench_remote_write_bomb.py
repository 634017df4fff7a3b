"""Remote-write "snappy bomb": time and peak memory to refuse it, before and after bounds.

The body of issue 26: 2.5 M samples of one dcgm gauge in 2,500 series — 45 MB of protobuf
that snappy squeezes into ~2.1 MB. Also a body just under the 8 MiB size cap (400,000
samples), which only counting on the wire can refuse. Each case runs the decode stage of the
receiver (what ``ingest_remote_write`` does before mapping: decompress, parse, count) in a
fresh Python process, so its peak RSS (``ru_maxrss``) is the case's own.

``--before REV`` runs the same cases against the decoder of git revision ``REV`` (extracted
into a temporary directory; pure Python, no Django), with that revision's caps (64 MiB
uncompressed, then the 100,000-sample check on the decoded list).

    python bench/bench_remote_write_bomb.py --before 2104ff8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT, write_result  # noqa: E402

# The decoder's files in a revision from before telemetry was regrouped by layer (``--before``).
FILES = (
    "telemetry/__init__.py",
    "telemetry/ingestion/__init__.py",
    "telemetry/ingestion/prometheus_parse.py",
    "telemetry/remote_write/__init__.py",
    "telemetry/remote_write/decode.py",
    "telemetry/remote_write/remote_pb2.py",
)

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
from tests.remote_write_bombs import bomb
try:  # this checkout's layout (telemetry/ingest/), else a revision from before the regroup
    from telemetry.receivers.remote_write import decode
except ImportError:
    from telemetry.remote_write import decode
total, per = int(sys.argv[3]), 1000
body, raw = bomb(samples_total=total, per_series=per, timestamp_ms=10**12)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
outcome = "accepted"
try:
    if hasattr(decode, "DecodeLimits"):
        limits = decode.DecodeLimits(
            max_uncompressed_bytes=8 * 2**20, max_series=100_000, max_samples=100_000,
            max_labels=64, max_label_value_chars=1024,
        )
        decode.decode_write_request(body, limits=limits)
    else:  # the receiver before bounds: decode everything, then count
        samples = decode.decode_write_request(body, max_uncompressed_bytes=64 * 2**20)
        if len(samples) > 100_000:
            raise decode.RemoteWriteError("too many samples", status=413)
except decode.RemoteWriteError as exc:
    outcome = f"{exc.status}: {exc.message[:80]}"
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"body_bytes": len(body), "protobuf_bytes": raw, "samples": total,
                  "seconds": round(elapsed, 3), "peak_rss_mib": round(peak / 1024, 1),
                  "rss_before_decode_mib": round(base / 1024, 1), "outcome": outcome}))
"""

CASES = {"bomb_2_5M": 2_500_000, "under_cap_400k": 400_000}


def _extract(rev: str, into: Path) -> None:
    for name in FILES:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{name}"], capture_output=True, check=True
        )
        target.write_bytes(shown.stdout)


def run(code_dir: Path) -> dict:
    out = {}
    for case, total in CASES.items():
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(code_dir), str(ROOT), str(total)],
            capture_output=True,
            text=True,
            check=True,
        )
        out[case] = json.loads(child.stdout)
        print(case, out[case], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", help="git revision whose decoder to measure as 'before'")
    args = parser.parse_args()
    result: dict = {}
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            _extract(args.before, Path(tmp))
            print(f"before ({args.before}):")
            result["before"] = {"revision": args.before, **run(Path(tmp))}
    print("after (this checkout):")
    result["after"] = run(ROOT)
    write_result("remote_write_bomb", result)


if __name__ == "__main__":
    main()
