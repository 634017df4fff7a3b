"""Who a viewer is shown: staff see usernames, customers roles (and their own tenant's people)."""

from __future__ import annotations

import pytest

from accounts.models import User
from accounts.selectors.people import person_shown, role_of, sees_people

pytestmark = pytest.mark.django_db


def test_staff_see_people_and_customers_do_not(users):
    assert sees_people(users["operator"]) and sees_people(users["approver"])
    assert not sees_people(users["customer"]) and not sees_people(None)


@pytest.mark.parametrize(("subject", "role"), [("operator", "operator"), ("approver", "approver")])
def test_a_customer_sees_staff_by_role(users, subject, role):
    assert person_shown(users["customer"], users[subject]) == role
    assert person_shown(users["operator"], users[subject]) == users[subject].username


def test_a_customer_sees_their_own_tenants_people_by_name(users, tenants):
    colleague = User.objects.create_user("acme-2", password="x", tenant=tenants["acme"])
    assert person_shown(users["customer"], colleague) == "acme-2"
    assert person_shown(users["other_customer"], colleague) == "customer"


def test_a_superuser_is_an_administrator_to_customers(users):
    boss = User.objects.create_superuser("boss", password="x")
    assert role_of(boss) == "administrator"
    assert person_shown(users["customer"], boss) == "administrator"
