"""HAProxy's per-server counters (``show stat <backend> 4 -1``), read as what was served.

The CSV ``show stat`` prints has one line per server with cumulative counters since HAProxy
started. What a split and an error ratio need, per server:

- ``requests`` — the client requests HAProxy sent to the server: ``stot`` (every session
  assigned, each retry a new one) minus ``wretr`` (the retries), measured against a real
  HAProxy 2.6 whose target refused connections: 5 client requests → ``stot`` 20, ``wretr`` 15;
- ``errors`` — the ones the router failed or the server answered with a 5xx: ``hrsp_5xx`` +
  ``econ`` (connection failed after the retries) + ``eresp`` (the response broke);
- ``retries`` — ``wretr``, shown (a retry is not a client's failure by itself).

A restart of HAProxy resets them (a later reading smaller than an earlier one).
"""

from __future__ import annotations

from rollout.routers.base import ANSWER_CHARS, RouterError

COLUMNS = ("stot", "wretr", "hrsp_5xx", "econ", "eresp")


def _int(value: str) -> int:
    return int(value) if value.strip().isdigit() else 0  # an empty cell: not counted there


def servers_counters(answer: str, backend: str) -> dict[str, dict[str, int]]:
    """``{server: {"requests", "errors", "retries"}}`` from ``show stat``'s CSV; garbage raises."""
    lines = [line for line in answer.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# "):
        text = answer.strip()[:ANSWER_CHARS] or "(empty)"
        raise RouterError("garbage", f"show stat answered: {text}")
    header = lines[0][2:].split(",")
    try:
        at = {name: header.index(name) for name in ("pxname", "svname", *COLUMNS)}
    except ValueError:
        raise RouterError("garbage", f"unexpected show stat columns: {lines[0][:200]}") from None
    found: dict[str, dict[str, int]] = {}
    for line in lines[1:]:
        cells = line.split(",")
        if len(cells) < len(header) - 1 or cells[at["pxname"]] != backend:
            continue
        name = cells[at["svname"]]
        if name in ("BACKEND", "FRONTEND"):
            continue
        value = {c: _int(cells[at[c]]) for c in COLUMNS}
        found[name] = {
            "requests": max(0, value["stot"] - value["wretr"]),
            "errors": value["hrsp_5xx"] + value["econ"] + value["eresp"],
            "retries": value["wretr"],
        }
    return found
