"""Prometheus-style label selectors that bind a workload to the cards it runs on.

A workload's ``series_selector`` is written as an SRE writes it in PromQL, braces optional:
``namespace="acme-bank", pod=~"llama-70b-.*"``. Matchers are ``=``, ``!=``, ``=~`` and ``!~``;
regular expressions are anchored at both ends, as in Prometheus. Only the attribution labels
exporters report are selectable (``namespace``, ``pod``, ``container``, ``hpc_job``, ``host``),
and at least one positive matcher (``=`` or ``=~`` on a non-empty pattern) is required, so a
selector can never bind every idle card of a cluster. Pure Python: the model validates with
it and telemetry's read side matches attribution intervals with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext as _

SELECTABLE_LABELS = ("namespace", "pod", "container", "hpc_job", "host")
MAX_SELECTOR_CHARS = 500
_MATCHER = re.compile(
    r'\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*'
)


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message names the problem and where."""


@dataclass(frozen=True)
class Matcher:
    """One ``name op "value"`` term; ``pattern`` is the anchored regex for ``=~``/``!~``."""

    name: str
    op: str
    value: str
    pattern: re.Pattern[str] | None = None

    def matches(self, labels: dict[str, str]) -> bool:
        # A missing label is the empty string, as in Prometheus.
        seen = labels.get(self.name, "")
        if self.op == "=":
            return seen == self.value
        if self.op == "!=":
            return seen != self.value
        assert self.pattern is not None
        found = self.pattern.fullmatch(seen) is not None
        return found if self.op == "=~" else not found

    @property
    def positive(self) -> bool:
        return self.op in ("=", "=~") and self.value != ""


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value)


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """The matchers of ``text``; raises :class:`SelectorError` naming the first problem."""
    body = text.strip()
    if len(body) > MAX_SELECTOR_CHARS:
        raise SelectorError(
            _("A selector is at most %(n)d characters.") % {"n": MAX_SELECTOR_CHARS}
        )
    if body.startswith("{"):
        if not body.endswith("}"):
            raise SelectorError(_("The selector opens a brace it does not close."))
        body = body[1:-1]
    matchers: list[Matcher] = []
    position = 0
    while position < len(body):
        found = _MATCHER.match(body, position)
        if found is None:
            raise SelectorError(
                _('Cannot read a matcher at character %(at)d: expected name="value".')
                % {"at": position + 1}
            )
        name, op, raw = found.group("name"), found.group("op"), found.group("value")
        if name not in SELECTABLE_LABELS:
            raise SelectorError(
                _("Unknown label %(name)r: selectors may use %(labels)s.")
                % {"name": name, "labels": ", ".join(SELECTABLE_LABELS)}
            )
        value = _unescape(raw)
        pattern = None
        if op in ("=~", "!~"):
            try:
                pattern = re.compile(value)
            except re.error as exc:
                raise SelectorError(
                    _("The regular expression for %(name)s is invalid: %(error)s.")
                    % {"name": name, "error": exc}
                ) from exc
        matchers.append(Matcher(name=name, op=op, value=value, pattern=pattern))
        position = found.end()
        if position < len(body):
            if body[position] != ",":
                raise SelectorError(
                    _("Expected a comma at character %(at)d.") % {"at": position + 1}
                )
            position += 1
    if not matchers:
        raise SelectorError(_("The selector is empty."))
    if not any(m.positive for m in matchers):
        raise SelectorError(
            _('A selector needs at least one = or =~ matcher on a value, e.g. namespace="team-a".')
        )
    return tuple(matchers)


def selector_matches(matchers: tuple[Matcher, ...], labels: dict[str, str]) -> bool:
    """Whether every matcher accepts ``labels`` (an attribution interval's holder labels)."""
    return all(m.matches(labels) for m in matchers)
