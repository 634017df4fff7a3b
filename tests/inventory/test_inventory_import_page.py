"""The inventory import page: counts after an import, every problem with its line, in
English and zh-hans."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from inventory.models import Node
from tests.factories import ClusterFactory
from tests.test_i18n_pages import english_words

pytestmark = pytest.mark.django_db

CSV = "hostname,rack,supernode\ngpu-a01,r01,sn1\ngpu-a02,r01,sn1\n"


def post(client, cluster, text: str, **extra):
    upload = SimpleUploadedFile("racks.csv", text.encode(), content_type="text/csv")
    return client.post("/inventory/import/", {"cluster": cluster.pk, "file": upload, **extra})


def test_an_operator_imports_a_file_and_sees_the_counts(client_as):
    cluster = ClusterFactory()
    response = post(client_as("operator"), cluster, CSV)
    assert response.status_code == 200
    assert response.context["report"].created == 2
    assert Node.objects.filter(cluster=cluster, rack__name="r01").count() == 2


def test_a_bad_file_is_a_400_page_listing_each_line_and_nothing_is_written(client_as):
    cluster = ClusterFactory()
    response = post(client_as("operator"), cluster, "hostname,rack\n,r1\ngpu-2,\ngpu-2,\n")
    assert response.status_code == 400
    text = response.content.decode()
    assert "line 2, hostname" in text and "line 4, hostname" in text
    assert not Node.objects.filter(cluster=cluster).exists()


def test_the_page_reads_in_zh_hans_with_its_counts_and_problems(client_as, settings):
    cluster = ClusterFactory()
    client = client_as("operator")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    page = client.get("/inventory/import/")
    assert "资产导入" in page.content.decode()
    assert english_words(page.content.decode()) == []
    done = post(client, cluster, CSV, dry_run="on")
    assert "试运行" in done.content.decode()
    assert english_words(done.content.decode()) == []
    refused = post(client, cluster, "hostname,rack\n,r1\n")
    assert "第 2 行" in refused.content.decode()
    assert english_words(refused.content.decode()) == []


def test_the_exporters_page_links_operators_to_the_import(client_as):
    assert "/inventory/import/" in client_as("operator").get("/exporters/").content.decode()
    assert "/inventory/import/" not in client_as("approver").get("/exporters/").content.decode()
