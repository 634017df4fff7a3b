"""Who holds a card now and who held it over the last 24 hours (the card page's swimlane).

Both kinds of attribution interval are read (``telemetry.read.card_holdings``): the
scheduler's allocations and the exporters' labels, one lane each. The holder *now* follows the
precedence rule (``telemetry.read.holder_now``: scheduler, then exporter labels). Cards are
shared infrastructure but their holders are not: a customer sees its own tenant's jobs by
name and everyone else's only as "another tenant".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.selectors.scoping import principal_sees_all
from inventory.models import Accelerator
from telemetry.read import CardHolding, card_holdings, holder_now

WINDOW = timedelta(hours=24)


@dataclass
class CardHolders:
    """The card's holdings in ``[start, end]`` (oldest first) and its holder at ``end``."""

    card: Accelerator
    start: datetime
    end: datetime
    holdings: list[CardHolding]
    now: CardHolding | None


def _masked(holding: CardHolding, tenant_id: int | None) -> CardHolding:
    """Another tenant's holding as a customer may see it: that the card was held, not by whom."""
    if holding.tenant_id is not None and holding.tenant_id == tenant_id:
        return holding
    other = _("another tenant")
    return replace(holding, holder=other, job="", tenant=other, tenant_id=None, host="")


def card_holders(card: Accelerator, user, *, now: datetime | None = None) -> CardHolders:
    """The last 24 h of ``card``'s holders as ``user`` may see them."""
    end = now or timezone.now()
    start = end - WINDOW
    holdings = card_holdings(start=start, end=end, accelerator_ids=[card.pk])
    if not principal_sees_all(user):
        tenant_id = getattr(user, "tenant_id", None)
        holdings = [_masked(h, tenant_id) for h in holdings]
    return CardHolders(
        card=card, start=start, end=end, holdings=holdings, now=holder_now(holdings, end)
    )
