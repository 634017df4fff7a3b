"""Slurm's own notations, parsed strictly: hostlists (``gpu-[001-004,007]``), a job's
``gres_detail`` entries (``gpu:h100:2(IDX:0-1)``) and TRES requests (``gres:gpu:2``). Anything
that does not parse raises :class:`NotationError` naming the text, so a job whose allocation
cannot be read is refused instead of being counted wrong."""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from django.utils.translation import gettext as _

MAX_HOSTS = 100_000  # a hostlist expanding beyond this is refused (a typo, or an attack)
# The parsers are pure, and a 20,000-job answer repeats the same few hundred strings (one
# node's name, ``gres:gpu:1``): each distinct text is parsed once per process. A text that
# does not parse raises every time (errors are not cached).
CACHED_TEXTS = 8192


class NotationError(ValueError):
    """A Slurm string that does not parse; the message names it."""


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "[":
            depth += 1
            if depth > 1:
                raise NotationError(_("Nested brackets in hostlist %(text)r.") % {"text": text})
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise NotationError(_("Unbalanced brackets in hostlist %(text)r.") % {"text": text})
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise NotationError(_("Unbalanced brackets in hostlist %(text)r.") % {"text": text})
    parts.append("".join(current))
    return parts


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_HOST_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")


def _expand_range(spec: str, text: str) -> list[str]:
    out = []
    for piece in spec.split(","):
        match = _RANGE.match(piece)
        if not match:
            raise NotationError(
                _("Range %(piece)r in hostlist %(text)r does not parse.")
                % {"piece": piece, "text": text}
            )
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise NotationError(
                _("Range %(piece)r in hostlist %(text)r runs backwards.")
                % {"piece": piece, "text": text}
            )
        width = len(low) if low.startswith("0") else 0  # zero padding is kept
        if int(high) - int(low) >= MAX_HOSTS:
            raise NotationError(_("Hostlist %(text)r is too large.") % {"text": text})
        out.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return out


def expand_hostlist(text: str | None) -> list[str]:
    """``"gpu-[001-002],cpu1"`` → ``["gpu-001", "gpu-002", "cpu1"]``; empty → ``[]``."""
    return list(_expand_hostlist((text or "").strip()))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _expand_hostlist(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    hosts: list[str] = []
    for item in _split_top(text):
        # Alternate literal text and bracket groups; several groups make a product.
        pieces = re.split(r"\[([^\]]*)\]", item)
        choices = []
        for index, piece in enumerate(pieces):
            if index % 2:
                choices.append(_expand_range(piece, text))
            elif piece:
                if not _HOST_CHARS.match(piece):
                    raise NotationError(
                        _("Host name %(piece)r in hostlist %(text)r has unexpected characters.")
                        % {"piece": piece, "text": text}
                    )
                choices.append([piece])
        if not choices:
            raise NotationError(_("Empty entry in hostlist %(text)r.") % {"text": text})
        hosts.extend("".join(parts) for parts in itertools.product(*choices))
        if len(hosts) > MAX_HOSTS:
            raise NotationError(_("Hostlist %(text)r is too large.") % {"text": text})
    return tuple(hosts)


@dataclass(frozen=True)
class Cards:
    """Cards of one GRES name (and type) on one node, with their GRES indices."""

    name: str
    type: str
    indices: tuple[int, ...]

    def as_json(self) -> dict:
        return {"name": self.name, "type": self.type, "indices": list(self.indices)}


_GRES_DETAIL = re.compile(
    r"(?P<name>[A-Za-z][\w.-]*)(?::(?P<type>[\w.-]+))?:(?P<count>\d+)\(IDX:(?P<idx>[^)]*)\)"
)


def _indices(spec: str, text: str) -> tuple[int, ...]:
    if spec == "N/A":
        return ()
    out: list[int] = []
    for piece in spec.split(","):
        match = _RANGE.match(piece)
        if not match:
            raise NotationError(_("GRES indices in %(text)r do not parse.") % {"text": text})
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low or high - low > 4096:
            raise NotationError(_("GRES indices in %(text)r do not parse.") % {"text": text})
        out.extend(range(low, high + 1))
    return tuple(out)


def parse_gres_detail(text: str) -> list[Cards]:
    """One ``gres_detail`` entry (one node): ``"gpu:h100:1(IDX:2),npu:910b:2(IDX:0-1)"``."""
    return list(_parse_gres_detail(text))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _parse_gres_detail(text: str) -> tuple[Cards, ...]:
    cards, position = [], 0
    while position < len(text):
        match = _GRES_DETAIL.match(text, position)
        if not match:
            raise NotationError(_("GRES allocation %(text)r does not parse.") % {"text": text})
        indices = _indices(match.group("idx"), text)
        if len(indices) != int(match.group("count")):
            raise NotationError(
                _("GRES allocation %(text)r counts %(count)s cards but lists %(listed)s indices.")
                % {"text": text, "count": match.group("count"), "listed": len(indices)}
            )
        if indices:
            cards.append(Cards(match.group("name"), match.group("type") or "", indices))
        position = match.end()
        if position < len(text):
            if text[position] != ",":
                raise NotationError(_("GRES allocation %(text)r does not parse.") % {"text": text})
            position += 1
    return tuple(cards)


_TRES_GRES = re.compile(r"^gres[:/](?P<name>[A-Za-z][\w.-]*)(?::(?P<type>[\w.-]+))?[:=](?P<n>\d+)$")


def parse_tres_gres(text: str | None) -> dict[str, int]:
    """GRES counts in a TRES request: ``"gres:gpu:h100:1,gres:npu:2"`` → ``{gpu: 1, npu: 2}``.
    Entries that are not GRES (``cpu=2``, ``mem=4G``) are skipped; a GRES entry that does not
    parse is refused."""
    return dict(_parse_tres_gres(text or ""))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _parse_tres_gres(text: str) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry.startswith("gres"):
            continue
        match = _TRES_GRES.match(entry)
        if not match:
            raise NotationError(_("GRES request %(text)r does not parse.") % {"text": text})
        counts[match.group("name")] = counts.get(match.group("name"), 0) + int(match.group("n"))
    return tuple(counts.items())
