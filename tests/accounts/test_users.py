"""Users: staff belong to no tenant, enforced by validation and by the database."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError

from accounts.models import User


@pytest.mark.django_db
def test_staff_user_with_a_tenant_fails_validation_naming_the_field(tenants):
    user = User(username="x", is_staff=True, tenant=tenants["acme"])
    user.set_password("a-long-password-1")
    with pytest.raises(ValidationError) as excinfo:
        user.full_clean()
    assert "tenant" in excinfo.value.message_dict


@pytest.mark.django_db
def test_database_refuses_a_staff_user_with_a_tenant(tenants):
    with pytest.raises(IntegrityError):
        User.objects.create(username="x", is_staff=True, tenant=tenants["acme"])


@pytest.mark.django_db
def test_only_staff_with_the_permission_see_all_tenants(users):
    assert users["operator"].sees_all_tenants
    assert users["approver"].sees_all_tenants
    assert not users["customer"].sees_all_tenants
    assert users["customer"].is_customer
