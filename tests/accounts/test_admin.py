"""Every admin page the portal registers opens for a superuser."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse


@pytest.mark.django_db
def test_every_registered_admin_changelist_opens(admin_client):
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert admin_client.get(url).status_code == 200, url
