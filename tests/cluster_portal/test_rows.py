"""Plain rows: a values_list queryset's tuples straight off the cursor."""

from __future__ import annotations

import pytest

from accounts.models import Tenant
from cluster_portal.web.rows import plain_rows

pytestmark = pytest.mark.django_db


def test_plain_rows_are_the_tuples_values_list_gives():
    Tenant.objects.create(slug="acme", name="Acme")
    Tenant.objects.create(slug="zeta", name="Zeta")
    query = Tenant.objects.order_by("slug").values_list("pk", "slug", "name")
    assert plain_rows(query) == list(query)


def test_a_query_that_cannot_match_gives_no_rows_without_asking_the_database(
    django_assert_num_queries,
):
    with django_assert_num_queries(0):
        assert plain_rows(Tenant.objects.filter(pk__in=[]).values_list("pk")) == []
