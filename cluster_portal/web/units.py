"""Numbers people can read: one formatter for every figure the portal shows.

A value is formatted by its catalogue unit (``MetricDefinition.unit``): durations pick ms, s,
min, h or d so "132,084 ms" reads "2.2 min"; bytes use IEC prefixes (GiB: memory is sized
in powers of two); bytes/s, watts and joules use SI prefixes (GB/s: datasheets and link
speeds are decimal); whole numbers print without decimals (64, not 64.00); grouping follows
the active language through Django's number formatting (``cluster_portal/formats``).

Template filters (``{% load units %}``) and the dashboard payloads call :func:`format_value`;
``static/js/units.js`` mirrors the same rules for tables and Plotly ticks in the browser.
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.utils.formats import number_format
from django.utils.translation import gettext as _

SI_PREFIXES = ("", "k", "M", "G", "T", "P", "E")
IEC_PREFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
MISSING = "—"


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | Decimal):
        return True
    return isinstance(value, float) and math.isfinite(value)


def number(value: float | int | None, *, digits: int = 3, decimals: int | None = None) -> str:
    """A plain number with the language's grouping: integers whole, others to ``digits``
    significant figures (at least the integer part), trailing zeros dropped."""
    if not _is_number(value):
        return MISSING
    value = float(value)
    if decimals is None:
        if value.is_integer():
            decimals = 0
        else:
            magnitude = int(math.floor(math.log10(abs(value)))) + 1 if value else 1
            decimals = max(digits - magnitude, 0)
    rounded = round(value, decimals)
    if rounded == 0:
        rounded = 0.0  # no "-0"
    text = f"{rounded:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    places = len(text.split(".")[1]) if "." in text else 0
    return number_format(Decimal(text), places, use_l10n=True, force_grouping=True)


def integer(value: float | int | None) -> str:
    """A count: rounded to a whole number, grouped ("10,240")."""
    if not _is_number(value):
        return MISSING
    return number(round(float(value)), decimals=0)


def percent(ratio: float | None, *, decimals: int = 1) -> str:
    """A 0–1 ratio as a percentage ("87.5%"; "100%" without a trailing ".0")."""
    if not _is_number(ratio):
        return MISSING
    return _("%(value)s%%") % {"value": number(float(ratio) * 100, decimals=decimals)}


def _prefixed(value: float, symbol: str, *, base: int, prefixes: tuple[str, ...]) -> str:
    scaled, index = float(value), 0
    while abs(scaled) >= base and index < len(prefixes) - 1:
        scaled /= base
        index += 1
    # 999.96 rounds to "1000": step up a prefix so it reads "1 k…" instead.
    if (
        round(abs(scaled), max(3 - len(str(int(abs(scaled)))), 0)) >= base
        and index < len(prefixes) - 1
    ):
        scaled /= base
        index += 1
    return f"{number(scaled)} {prefixes[index]}{symbol}"


def si(value: float | None, symbol: str) -> str:
    """SI prefixes, base 1000: ``si(5e10, "B/s")`` → "50 GB/s"."""
    if not _is_number(value):
        return MISSING
    return _prefixed(float(value), symbol, base=1000, prefixes=SI_PREFIXES)


def iec(value: float | None, symbol: str = "B") -> str:
    """IEC prefixes, base 1024: ``iec(64 * 2**30)`` → "64 GiB"."""
    if not _is_number(value):
        return MISSING
    return _prefixed(float(value), symbol, base=1024, prefixes=IEC_PREFIXES)


def duration(seconds: float | None) -> str:
    """A duration in the unit that keeps it short: 0.0421 → "42.1 ms", 132.084 → "2.2 min"."""
    if not _is_number(seconds):
        return MISSING
    s = float(seconds)
    size = abs(s)
    if size == 0:
        return _("%(value)s s") % {"value": "0"}
    if size < 1e-3:
        return _("%(value)s µs") % {"value": number(s * 1e6)}
    if size < 1:
        return _("%(value)s ms") % {"value": number(s * 1e3)}
    if size < 120:
        return _("%(value)s s") % {"value": number(s)}
    if size < 120 * 60:
        return _("%(value)s min") % {"value": number(s / 60, digits=2)}
    if size < 48 * 3600:
        return _("%(value)s h") % {"value": number(s / 3600, digits=2)}
    return _("%(value)s d") % {"value": number(s / 86400, digits=2)}


def format_value(value: float | int | None, unit: str = "") -> str:
    """Any figure by its catalogue unit; unknown units print the number and the unit."""
    if not _is_number(value):
        return MISSING
    if unit == "ratio":
        return percent(value)
    if unit in ("seconds", "seconds_as_ms"):
        return duration(value)
    if unit == "milliseconds":
        return duration(float(value) / 1000)
    if unit == "bytes":
        return iec(value)
    if unit in ("bytes_per_second", "bytes/s"):
        return si(value, "B/s")
    if unit == "watts":
        return si(value, "W")
    if unit == "joules":
        return si(value, "J")
    if unit == "celsius":
        return f"{number(value, decimals=0)} °C"
    if unit in ("", "none", "count"):
        return number(value)
    return f"{number(value)} {unit}"


# Prometheus naming: a metric (or a table column named after one) ends with its base unit.
_SUFFIX_UNITS = (
    ("_bytes_per_second", "bytes_per_second"),
    ("_bytes_per_s", "bytes_per_second"),
    ("_bytes", "bytes"),
    ("_ratio", "ratio"),
    ("_seconds", "seconds"),
    ("_watts", "watts"),
    ("_joules", "joules"),
    ("_celsius", "celsius"),
    ("_ms", "milliseconds"),  # SLO targets and list columns kept in ms for their CSV
)


def unit_for_metric(name: str) -> str:
    """The unit a metric or column name declares by its suffix ("" when it names none)."""
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return ""
