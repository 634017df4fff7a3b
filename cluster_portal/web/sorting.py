"""Natural order for hardware names: ``r2`` before ``r10``, ``node-9`` before ``node-10``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Numbers inside a name compare as numbers; text parts compare case-insensitively.

    Parts are tagged ``(0, int)`` / ``(1, str)`` so a number never compares with a string.
    """
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part.casefold())
        for part in _DIGITS.split(str(text))
        if part
    )


def natural_sorted(items: Iterable[T], key: Callable[[T], str] | None = None) -> list[T]:
    """``items`` in natural order of ``key(item)`` (the item itself by default)."""
    pick = key or str
    return sorted(items, key=lambda item: natural_key(pick(item)))
