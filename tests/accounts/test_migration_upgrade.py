"""Upgrading a database from before the app split keeps its data, tables and permissions.

The database is taken back to the last migrations before the split (everything in the former
``monitoring`` app), filled through the historical models, then migrated forward again; the
rows must read through the new apps' models, and a group's permission on a moved model must
survive (content types follow their models).
"""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE_SPLIT = [
    ("monitoring", "0010_rollup_covering_index"),
    ("rollout", "0002_audit_append_only"),
    ("simulation", "0003_tick_gaps"),
    ("inventory", None),
    ("telemetry", None),
    ("alerts", None),
    ("cost", None),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def _leaves():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_an_old_database_upgrades_with_its_rows_and_permissions():
    try:
        old = _migrate(BEFORE_SPLIT)
        # Content types and permissions as post_migrate left them before the split.
        content_type = old.get_model("contenttypes", "ContentType")
        permission = old.get_model("auth", "Permission")
        group = old.get_model("auth", "Group")
        ct, _ = content_type.objects.get_or_create(app_label="monitoring", model="cluster")
        view, _ = permission.objects.get_or_create(
            content_type=ct, codename="view_cluster", defaults={"name": "Can view cluster"}
        )
        watchers = group.objects.create(name="cluster-watchers")
        watchers.permissions.add(view)

        tenant = old.get_model("monitoring", "Tenant").objects.create(slug="old", name="Old")
        cluster = old.get_model("monitoring", "Cluster").objects.create(
            name="legacy-a", kind="split"
        )
        old.get_model("monitoring", "Workload").objects.create(
            tenant=tenant, cluster=cluster, name="old-chat", kind="inference"
        )
        metric = old.get_model("monitoring", "MetricDefinition").objects.create(
            name="old_metric", unit="1", type="gauge", entity_kind="cluster"
        )
        entity = old.get_model("monitoring", "Entity").objects.create(
            cluster=cluster, kind="cluster", key="cluster"
        )
        old.get_model("monitoring", "Sample").objects.create(
            metric=metric, entity=entity, ts=timezone.now(), value=42.0
        )
    finally:
        _migrate(_leaves())

    from django.contrib.auth.models import Group

    from inventory.models import Cluster, Workload
    from telemetry.models import Entity, MetricDefinition
    from telemetry.read import latest_values

    ContentType.objects.clear_cache()
    upgraded = Cluster.objects.get(name="legacy-a")
    assert Workload.objects.get(name="old-chat").cluster == upgraded
    assert Cluster._meta.db_table == "monitoring_cluster"
    moved = ContentType.objects.get_for_model(Cluster)
    assert (moved.app_label, moved.model) == ("inventory", "cluster")
    assert not ContentType.objects.filter(app_label="monitoring", model="cluster").exists()
    granted = Group.objects.get(name="cluster-watchers").permissions.get()
    assert (granted.content_type, granted.codename) == (moved, "view_cluster")

    entity = Entity.objects.get(cluster=upgraded, key="cluster")
    assert MetricDefinition.objects.filter(name="old_metric").exists()
    assert latest_values([entity]) == {entity.pk: {"old_metric": 42.0}}


@pytest.mark.django_db
def test_a_fresh_database_has_every_moved_table_under_its_old_name():
    """Models moved out of ``monitoring`` keep their ``monitoring_`` tables; a model added to
    an app after the split may have Django's own name for it (``<app>_<model>``) — nothing else."""
    tables = set(connection.introspection.table_names())
    from django.apps import apps

    for label in ("inventory", "telemetry", "alerts", "cost"):
        for model in apps.get_app_config(label).get_models():
            table = model._meta.db_table
            assert table.startswith("monitoring_") or table == f"{label}_{model._meta.model_name}"
            assert table in tables
    # The moved core keeps its names (what an upgraded database has).
    for name in ("cluster", "node", "accelerator", "workload", "entity", "sample", "frame"):
        assert f"monitoring_{name}" in tables
