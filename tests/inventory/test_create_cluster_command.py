"""The create_cluster set-up command: validated by the model, idempotent, nothing written on
bad input."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory.models import Cluster, Confidence, HardwareModel

pytestmark = pytest.mark.django_db


def run(*words: str) -> str:
    out = io.StringIO()
    call_command(*words, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_cluster_creates_once_and_then_says_unchanged():
    assert "created" in run("create_cluster", "prod", "--kind", "unified")
    assert "unchanged" in run("create_cluster", "prod", "--kind", "unified")
    cluster = Cluster.objects.get(name="prod")
    assert cluster.kind == "unified" and cluster.scrape_interval_seconds == 15


def test_create_cluster_takes_the_hardware_model_and_attribution_settings():
    HardwareModel.objects.create(
        slug="h100",
        name="H100",
        vendor="NVIDIA",
        hbm_bytes=80 * 2**30,
        hbm_bandwidth_bytes_per_s=3.35e12,
        peak_flops=9.89e14,
        confidence=Confidence.HIGH,
    )
    run(
        "create_cluster",
        "gpu",
        "--kind",
        "legacy",
        "--hardware-model",
        "h100",
        "--host-labels",
        "Hostname,node",
        "--scrape-interval",
        "30",
        "--default",
    )
    cluster = Cluster.objects.get(name="gpu")
    assert cluster.hardware_model.slug == "h100" and cluster.host_labels == "Hostname,node"
    assert cluster.scrape_interval_seconds == 30 and cluster.default_for_pages


def test_a_different_existing_cluster_is_refused_unless_updating():
    run("create_cluster", "prod", "--kind", "unified")
    with pytest.raises(CommandError, match="kind: 'unified' → 'split'"):
        run("create_cluster", "prod", "--kind", "split")
    assert Cluster.objects.get(name="prod").kind == "unified"
    assert "updated" in run("create_cluster", "prod", "--kind", "split", "--update")
    assert Cluster.objects.get(name="prod").kind == "split"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("bad name", "--kind", "unified"), "name"),
        (("prod", "--kind", "unified", "--scrape-interval", "0"), "scrape_interval_seconds"),
        (("prod", "--kind", "unified", "--host-labels", "a b"), "host_labels"),
        (("prod", "--kind", "unified", "--hardware-model", "nope"), "Unknown hardware model"),
    ],
)
def test_bad_input_is_refused_naming_it_and_nothing_is_written(words, message):
    with pytest.raises(CommandError, match=message):
        run("create_cluster", *words)
    assert not Cluster.objects.exists()
