"""A small closed-loop HTTP load generator: N users, each requesting as fast as answers come."""

from __future__ import annotations

import random
import re
import threading
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta

SPANS = {"1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}


def unique_range(path: str, rng: random.Random) -> str:
    """``path`` with its preset range (or ``hours``) replaced by a range no one asked before:
    what a person choosing custom ranges in the time picker costs (no shared cache entry)."""
    preset = re.search(r"range=(\w+)", path)
    if preset:
        end = datetime.now(tz=UTC) - timedelta(seconds=rng.uniform(0, 600))
        start = end - timedelta(seconds=SPANS[preset.group(1)])
        query = urllib.parse.urlencode({"start": start.isoformat(), "end": end.isoformat()})
        return path.replace(preset.group(0), query)
    hours = re.search(r"hours=([\d.]+)", path)
    if hours:
        unique = float(hours.group(1)) - rng.uniform(0, 0.1)
        return path.replace(hours.group(0), f"hours={unique:.6f}")
    return path


def run_users(
    base_url: str,
    paths: list[tuple[str, str]],
    *,
    users: int,
    seconds: float,
    token: str,
    unique_ranges: bool = False,
) -> dict[str, list[float]]:
    """Each user cycles through ``paths`` for ``seconds``; returns latencies (ms) per label.

    With ``unique_ranges`` every request asks for a range of the same length that no other
    request asked for (see :func:`unique_range`)."""
    latencies: dict[str, list[float]] = {label: [] for label, _ in paths}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def user(offset: int) -> None:
        i = offset
        rng = random.Random(offset)
        while time.monotonic() < deadline:
            label, path = paths[i % len(paths)]
            i += 1
            if unique_ranges:
                path = unique_range(path, rng)
            request = urllib.request.Request(
                base_url + path, headers={"Authorization": f"Bearer {token}"}
            )
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
            except OSError as exc:
                with lock:
                    errors.append(f"{path}: {exc}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                latencies[label].append(elapsed)

    threads = [threading.Thread(target=user, args=(n,)) for n in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. {errors[:3]}")
    return latencies
