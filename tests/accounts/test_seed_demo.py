"""seed_demo creates every demo role and, run again, changes nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from accounts.models import Tenant, User


@pytest.fixture(autouse=True)
def isolated_var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def snapshot() -> list[tuple]:
    return list(
        User.objects.order_by("username").values_list(
            "username", "password", "is_staff", "is_superuser", "tenant__slug"
        )
    )


@pytest.mark.django_db
def test_seed_demo_creates_tenants_and_users_of_every_role():
    call_command("seed_demo", "--password", "demo-pass-123", stdout=StringIO())
    assert set(Tenant.objects.values_list("slug", flat=True)) == {"acme-bank", "zhiyuan-ai"}
    by_name = {u.username: u for u in User.objects.all()}
    assert set(by_name) == {
        "admin",
        "operator",
        "approver1",
        "approver2",
        "customer-acme-bank",
        "customer-zhiyuan-ai",
    }
    assert by_name["admin"].is_superuser
    assert by_name["operator"].has_perm("monitoring.operate_cluster")
    assert not by_name["operator"].has_perm("monitoring.approve_migrations")
    assert by_name["approver2"].has_perm("monitoring.approve_migrations")
    assert by_name["customer-zhiyuan-ai"].tenant.slug == "zhiyuan-ai"
    assert not by_name["customer-zhiyuan-ai"].has_perm("monitoring.view_all_tenants")
    assert all(u.check_password("demo-pass-123") for u in by_name.values())


@pytest.mark.django_db
def test_running_seed_demo_twice_changes_nothing():
    call_command("seed_demo", "--password", "demo-pass-123", stdout=StringIO())
    before = snapshot()
    out = StringIO()
    call_command("seed_demo", "--password", "demo-pass-123", stdout=out)
    assert snapshot() == before
    assert "0 created/updated, 6 unchanged" in out.getvalue()


@pytest.mark.django_db
def test_default_password_is_generated_once_printed_and_reused():
    first = StringIO()
    call_command("seed_demo", stdout=first)
    password = first.getvalue().rsplit(":", 1)[1].strip()
    assert User.objects.get(username="operator").check_password(password)
    before = snapshot()
    second = StringIO()
    call_command("seed_demo", stdout=second)
    assert password in second.getvalue()
    assert snapshot() == before
