"""Tokenizer for the Prometheus text exposition format 0.0.4 (pure Python, no Django).

Written by hand rather than using ``prometheus_client``'s parser, which rewrites what the
exporters print: it turns millisecond timestamps into seconds and appends ``_total`` to counter
sample names (DESIGN.md §5). This parser returns names, labels and timestamps exactly as sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ParsedSample", "PrometheusParseError", "parse_text"]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_BLANKS = re.compile(r"[ \t]*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
# Spelled out because Python's float() also accepts "1_000" and "infinity"-style words that
# Prometheus would reject; the accepted set matches Go's strconv.ParseFloat for these cases.
_VALUE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Nn]a[Nn]|[Ii]nf(?:inity)?)")
_TIMESTAMP = re.compile(r"-?\d+")
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
# Sample-name suffixes that belong to a family declared under the bare name.
_FAMILY_SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum")


class PrometheusParseError(ValueError):
    """The text is not valid exposition format; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
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


def parse_text(text: str) -> list[ParsedSample]:
    """Parse exposition text into samples; raise ``PrometheusParseError`` on the first bad line.

    Accepts LF or CRLF line endings, a missing final newline, blank lines and comments.
    """
    types: dict[str, str] = {}
    samples: list[ParsedSample] = []
    for line_no, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        line = raw.removesuffix("\r").lstrip(" \t")
        if not line:
            continue
        if line[0] == "#":
            _parse_comment(line, line_no, types)
        else:
            samples.append(_parse_sample(line, line_no, types))
    return samples


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
