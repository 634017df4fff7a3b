"""``{% load money %}``: ``{{ amount|money:currency }}``, ``{{ amount|money0:currency }}``
(whole units) and ``{{ ledger_cents|cents:currency }}`` — see :mod:`cost.money`."""

from __future__ import annotations

from django import template

from cost import money as m

register = template.Library()


@register.filter
def money(value: float | None, currency: str = "") -> str:
    return m.money(value, currency)


@register.filter
def money0(value: float | None, currency: str = "") -> str:
    return m.money(value, currency, decimals=0)


@register.filter
def cents(value: int | None, currency: str = "") -> str:
    return m.cents(value, currency)
