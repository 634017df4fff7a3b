"""Tokenizer for the Prometheus text exposition format 0.0.4 (pure Python, no Django).

Written by hand rather than using ``prometheus_client``'s parser, which rewrites what the
exporters print: it turns millisecond timestamps into seconds and appends ``_total`` to counter
sample names (docs/architecture.md §5). This parser returns names, labels and timestamps
exactly as sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "ParseLimits",
    "ParsedSample",
    "PrometheusParseError",
    "control_character_in",
    "iter_text",
    "parse_text",
]

# NUL and the other C0/C1 controls, bidirectional overrides and invisible format characters,
# and lone surrogates: nothing a name, key or label needs, and NUL is refused by PostgreSQL.
# The one definition every ingestion path checks against (``telemetry.catalogue.limits``).
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)


def control_character_in(text: str) -> re.Match | None:
    """The first control/format character in ``text``, or ``None``."""
    return _CONTROL.search(text)


_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_BLANKS = re.compile(r"[ \t]*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
# Spelled out because Python's float() also accepts "1_000" and "infinity"-style words that
# Prometheus would reject; the accepted set matches Go's strconv.ParseFloat for these cases.
_VALUE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Nn]a[Nn]|[Ii]nf(?:inity)?)")
_TIMESTAMP = re.compile(r"-?\d{1,19}")  # fits an int64 of milliseconds; 5,000 digits do not
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
# Sample-name suffixes that belong to a family declared under the bare name.
_FAMILY_SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum")


class PrometheusParseError(ValueError):
    """The text is not valid exposition format; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


# Not frozen (one is built per received sample; a frozen dataclass's __init__ costs ~5× as
# much), but never mutated: hashed and compared by value as a frozen one would be.
@dataclass(slots=True, unsafe_hash=True)
class ParsedSample:
    """One sample line, exactly as written: no unit conversion, no renaming.

    ``timestamp_ms`` is the optional trailing timestamp (milliseconds since the epoch, as the
    format defines it); ``family_type`` comes from the ``# TYPE`` line of the sample's family.
    """

    name: str
    labels: dict[str, str] = field(hash=False)
    value: float
    timestamp_ms: int | None
    line: int
    family_type: str | None


@dataclass(frozen=True)
class ParseLimits:
    """Caps on one exposition; crossing one is a ``PrometheusParseError`` naming it."""

    max_lines: int = 400_000
    max_line_chars: int = 64 * 1024
    max_series: int = 100_000
    max_labels: int = 64
    max_label_value_chars: int = 1024


NO_LIMITS = ParseLimits(
    max_lines=2**62,
    max_line_chars=2**62,
    max_series=2**62,
    max_labels=2**62,
    max_label_value_chars=2**62,
)


def _lines(text: str):
    """``(number, line)`` without splitting the whole text into a list first."""
    start, number, end = 0, 0, len(text)
    while start <= end:
        stop = text.find("\n", start)
        if stop < 0:
            stop = end
        number += 1
        yield number, start, stop
        start = stop + 1


def iter_text(text: str, limits: ParseLimits = NO_LIMITS):
    """Yield samples one by one; raise ``PrometheusParseError`` on the first bad line or cap.

    Accepts LF or CRLF line endings, a missing final newline, blank lines and comments. A line
    over ``max_line_chars`` is refused before it is copied or tokenised.
    """
    types: dict[str, str] = {}
    series = 0
    text = text.removeprefix("\ufeff")
    for line_no, start, stop in _lines(text):
        if line_no > limits.max_lines:
            raise PrometheusParseError(
                line_no, f"more than {limits.max_lines} lines in one push (INGEST_MAX_LINES)"
            )
        if stop - start > limits.max_line_chars:
            raise PrometheusParseError(
                line_no,
                f"line longer than {limits.max_line_chars} characters (INGEST_MAX_LINE_BYTES)",
            )
        line = text[start:stop].removesuffix("\r").lstrip(" \t")
        if not line:
            continue
        if line[0] == "#":
            _parse_comment(line, line_no, types)
            continue
        sample = _parse_sample(line, line_no, types)
        series += 1
        if series > limits.max_series:
            raise PrometheusParseError(
                line_no, f"more than {limits.max_series} series in one push (INGEST_MAX_SERIES)"
            )
        if len(sample.labels) > limits.max_labels:
            raise PrometheusParseError(
                line_no,
                f"{sample.name}: more than {limits.max_labels} labels (INGEST_MAX_LABELS)",
            )
        for key, value in sample.labels.items():
            if len(value) > limits.max_label_value_chars:
                raise PrometheusParseError(
                    line_no,
                    f"{sample.name}: label {key!r} longer than {limits.max_label_value_chars} "
                    "characters (INGEST_MAX_LABEL_VALUE_CHARS)",
                )
        yield sample


def parse_text(text: str, limits: ParseLimits = NO_LIMITS) -> list[ParsedSample]:
    """Every sample of ``text`` (see :func:`iter_text`)."""
    return list(iter_text(text, limits))


def _parse_comment(line: str, line_no: int, types: dict[str, str]) -> None:
    parts = line[1:].split()
    if not parts or parts[0] not in ("HELP", "TYPE"):
        return  # an ordinary comment
    keyword = parts[0]
    if len(parts) < 2 or not _METRIC_NAME.fullmatch(parts[1]):
        raise PrometheusParseError(line_no, f"# {keyword} line needs a valid metric name")
    if keyword == "HELP":
        return  # help text is not kept
    if len(parts) != 3 or parts[2] not in _TYPES:
        raise PrometheusParseError(
            line_no, f"# TYPE {parts[1]}: expected one of {', '.join(sorted(_TYPES))}"
        )
    name, kind = parts[1], parts[2]
    if types.setdefault(name, kind) != kind:
        raise PrometheusParseError(line_no, f"# TYPE {name} redeclared as {kind}")


def _parse_sample(line: str, line_no: int, types: dict[str, str]) -> ParsedSample:
    match = _METRIC_NAME.match(line)
    if match is None:
        raise PrometheusParseError(line_no, f"expected a metric name, found {line[0]!r}")
    name = match.group()
    labels: dict[str, str] = {}
    pos = _BLANKS.match(line, match.end()).end()
    if pos < len(line) and line[pos] == "{":
        pos = _parse_labels(line, pos + 1, line_no, name, labels)
    elif pos == match.end() and pos < len(line):
        raise PrometheusParseError(line_no, f"unexpected {line[pos]!r} after metric name {name!r}")

    tokens = line[pos:].split()
    if not tokens:
        raise PrometheusParseError(line_no, f"{name}: missing sample value")
    if len(tokens) > 2:
        raise PrometheusParseError(
            line_no, f"{name}: unexpected text {tokens[2]!r} after timestamp"
        )
    if not _VALUE.fullmatch(tokens[0]):
        raise PrometheusParseError(line_no, f"{name}: invalid sample value {tokens[0]!r}")
    timestamp_ms = None
    if len(tokens) == 2:
        if not _TIMESTAMP.fullmatch(tokens[1]):
            raise PrometheusParseError(line_no, f"{name}: invalid timestamp {tokens[1]!r}")
        timestamp_ms = int(tokens[1])
    return ParsedSample(
        name=name,
        labels=labels,
        value=float(tokens[0]),
        timestamp_ms=timestamp_ms,
        line=line_no,
        family_type=_family_type(name, types),
    )


def _parse_labels(line: str, pos: int, line_no: int, metric: str, labels: dict[str, str]) -> int:
    """Fill ``labels`` from the text after ``{``; return the position after the closing ``}``."""
    end = len(line)
    while True:
        pos = _BLANKS.match(line, pos).end()
        if pos >= end:
            raise PrometheusParseError(line_no, f"{metric}: label set not closed with '}}'")
        if line[pos] == "}":
            return pos + 1  # also accepts a trailing comma before the brace
        match = _LABEL_NAME.match(line, pos)
        if match is None:
            raise PrometheusParseError(
                line_no, f"{metric}: expected a label name at column {pos + 1}, found {line[pos]!r}"
            )
        key = match.group()
        pos = _BLANKS.match(line, match.end()).end()
        if pos >= end or line[pos] != "=":
            raise PrometheusParseError(line_no, f"{metric}: expected '=' after label {key!r}")
        pos = _BLANKS.match(line, pos + 1).end()
        quoted = _QUOTED.match(line, pos)
        if quoted is None:
            problem = "is not closed" if line[pos : pos + 1] == '"' else "must be double-quoted"
            raise PrometheusParseError(line_no, f"{metric}: value of label {key!r} {problem}")
        if key in labels:
            raise PrometheusParseError(line_no, f"{metric}: duplicate label {key!r}")
        labels[key] = _unescape(quoted.group(1), line_no, key)
        pos = _BLANKS.match(line, quoted.end()).end()
        if pos < end and line[pos] == ",":
            pos += 1
        elif pos >= end or line[pos] != "}":
            raise PrometheusParseError(
                line_no, f"{metric}: expected ',' or '}}' after the value of label {key!r}"
            )


def _unescape(raw: str, line_no: int, key: str) -> str:
    if "\\" not in raw:
        return raw

    def replace(match: re.Match[str]) -> str:
        char = match.group(1)
        if char not in _ESCAPES:
            raise PrometheusParseError(
                line_no, f"invalid escape '\\{char}' in the value of label {key!r}"
            )
        return _ESCAPES[char]

    return _ESCAPE.sub(replace, raw)


def _family_type(name: str, types: dict[str, str]) -> str | None:
    kind = types.get(name)
    if kind is not None:
        return kind
    for suffix in _FAMILY_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in types:
            return types[name[: -len(suffix)]]
    return None
