"""Money as people read it: always with its currency and the language's separators.

``money(1234.5, "USD")`` → "1,234.50 USD" (zh-hans and en group the same way; Django's
number formatting picks the active language's separators). Amounts a ledger holds in cents
format through :func:`cents`. Whole-unit amounts (capex, budgets) use ``decimals=0``.
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.utils.formats import number_format

MISSING = "—"


def money(value: float | int | None, currency: str, *, decimals: int = 2) -> str:
    """``value`` in ``currency`` with grouping and ``decimals`` places; "—" when unknown."""
    if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
        return MISSING
    amount = round(float(value), decimals)
    if amount == 0:
        amount = 0.0  # no "-0.00"
    text = number_format(
        Decimal(f"{amount:.{decimals}f}"), decimals, use_l10n=True, force_grouping=True
    )
    return f"{text} {currency}".strip()


def cents(value: int | None, currency: str) -> str:
    """A ledger's whole cents as money."""
    return money(None if value is None else value / 100, currency)
