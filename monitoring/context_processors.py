"""Template context every page needs: the navigation for the user's role."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


def portal(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    nav: list[tuple[str, str]] = []
    if user is not None and user.is_authenticated:
        nav.append((str(_("Home")), reverse("home")))
        if getattr(user, "sees_all_tenants", False):
            # Pages of other apps are linked by URL name only: monitoring imports none of them.
            nav.append((str(_("Alerts")), reverse("alerts")))
            nav.append((str(_("Exporters")), reverse("exporters")))
            nav.append((str(_("Digital twin")), reverse("twin")))
            nav.append((str(_("Status")), reverse("status")))
            if user.is_staff:
                nav.append((str(_("Admin")), reverse("admin:index")))
    return {"portal_nav": nav}
