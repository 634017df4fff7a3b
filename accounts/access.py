"""Decorators that say who may open a page."""

from collections.abc import Callable

from django.contrib.auth.decorators import login_required, permission_required


def staff_page(view: Callable) -> Callable:
    """Operators and approvers only: anonymous → login, customers → 403."""
    return login_required(
        permission_required("monitoring.view_all_tenants", raise_exception=True)(view)
    )


def operator_page(view: Callable) -> Callable:
    """Operators only: anonymous → login, everyone else → 403."""
    return login_required(
        permission_required("monitoring.operate_cluster", raise_exception=True)(view)
    )
