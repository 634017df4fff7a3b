"""Template filters for readable figures: ``{% load units %}`` then
``{{ value|unit:"bytes" }}``, ``{{ seconds|duration }}``, ``{{ n|number }}``, ``{{ n|integer }}``,
``{{ ratio|percent }}``. The rules live in :mod:`cluster_portal.web.units`."""

from __future__ import annotations

from django import template

from cluster_portal.web import units

register = template.Library()


@register.filter
def unit(value: float | None, name: str = "") -> str:
    return units.format_value(value, name)


@register.filter
def metric_value(value: float | None, metric_name: str = "") -> str:
    """A value of a named metric, in the unit its name declares (``..._seconds`` → "42.1 ms")."""
    return units.format_value(value, units.unit_for_metric(metric_name or ""))


@register.filter
def duration(seconds: float | None) -> str:
    return units.duration(seconds)


@register.filter
def ms_duration(milliseconds: float | None) -> str:
    """A duration stored in milliseconds (SLO targets), shown like any other duration."""
    return units.duration(None if milliseconds is None else float(milliseconds) / 1000)


@register.filter
def number(value: float | None) -> str:
    return units.number(value)


@register.filter
def integer(value: float | None) -> str:
    return units.integer(value)


@register.filter
def percent(ratio: float | None) -> str:
    return units.percent(ratio)
