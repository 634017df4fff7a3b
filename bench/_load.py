"""A small closed-loop HTTP load generator: N users, each requesting as fast as answers come."""

from __future__ import annotations

import threading
import time
import urllib.request


def run_users(
    base_url: str, paths: list[tuple[str, str]], *, users: int, seconds: float, token: str
) -> dict[str, list[float]]:
    """Each user cycles through ``paths`` for ``seconds``; returns latencies (ms) per label."""
    latencies: dict[str, list[float]] = {label: [] for label, _ in paths}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def user(offset: int) -> None:
        i = offset
        while time.monotonic() < deadline:
            label, path = paths[i % len(paths)]
            i += 1
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
