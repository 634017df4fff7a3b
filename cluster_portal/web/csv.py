"""CSV responses for any dashboard table (series are exported as tables too).

Headers are stable column identifiers, not translated, so scripts reading the files keep
working whatever the UI language (the same rule as the alerts export).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.http import HttpResponse

FORMULA_PREFIXES = ("=", "+", "-", "@")


def csv_cell(value: Any) -> str:
    """One cell as text: times in ISO 8601, missing values empty, formulas neutralised."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    # Names come from exporters and tenants; a leading = + - @ would run as a spreadsheet
    # formula. Numbers are not text here, so a negative number is left alone.
    if text[:1] in FORMULA_PREFIXES and not isinstance(value, int | float):
        return "'" + text
    return text


def csv_response(
    *, filename: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> HttpResponse:
    """A downloadable CSV of ``rows`` under ``columns``."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in filename) or "export"
    response["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
    writer = csv.writer(response)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return response


def table_csv(name: str, table: dict) -> HttpResponse:
    """CSV of a dashboard table dict ``{"columns": [...], "rows": [[...], ...]}``."""
    return csv_response(filename=name, columns=table["columns"], rows=table["rows"])
