"""Template context every page needs: the navigation for the user's role."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy as _

# (label, URL name, who sees it). Pages are linked by URL name only: the web plumbing
# imports no app; a name that is not installed is simply left out.
STAFF_NAV = (
    (_("Overview"), "dashboard-overview"),
    (_("Hardware"), "dashboard-hardware"),
    (_("Memory pool"), "dashboard-memory"),
    (_("Network"), "dashboard-network"),
    (_("Workloads"), "workloads"),
    (_("Cost"), "cost"),
    (_("Migrations"), "migrations"),
    (_("Alerts"), "alerts"),
    (_("Scheduler"), "scheduler"),
    (_("What-if"), "whatif"),
    (_("Report"), "validation-report"),
    (_("Digital twin"), "twin"),
    (_("Exporters"), "exporters"),
    (_("Status"), "status"),
)
CUSTOMER_NAV = (
    (_("Workloads"), "workloads"),
    (_("Cost"), "cost"),
    (_("Migrations"), "migrations"),
    (_("Scheduler"), "scheduler"),
)


def _links(entries) -> list[tuple[str, str]]:
    links = []
    for label, name in entries:
        try:
            links.append((str(label), reverse(name)))
        except NoReverseMatch:
            continue
    return links


def portal(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    nav: list[tuple[str, str]] = []
    if user is not None and user.is_authenticated:
        nav.append((str(_("Home")), reverse("home")))
        if getattr(user, "sees_all_tenants", False):
            nav += _links(STAFF_NAV)
            if user.is_staff:
                nav.append((str(_("Admin")), reverse("admin:index")))
        else:
            nav += _links(CUSTOMER_NAV)
    return {"portal_nav": nav}
