"""Exporter-registered cards were keyed ``host/index``, which merged chips behind one address
and made a moved chip a new card. Their entity key becomes the chip id (the accelerator's
``vendor_id``; docs/architecture.md §5). Twin cards keep their topology keys."""

from django.db import migrations


def rekey(apps, schema_editor):
    Entity = apps.get_model("telemetry", "Entity")
    rows = Entity.objects.filter(
        kind="accelerator", accelerator__node__registered_by_exporter=True
    ).values_list("id", "cluster_id", "key", "accelerator__vendor_id")
    for entity_id, cluster_id, key, vendor_id in rows.iterator():
        if not vendor_id or key == vendor_id:
            continue
        taken = Entity.objects.filter(cluster_id=cluster_id, kind="accelerator", key=vendor_id)
        if not taken.exists():
            Entity.objects.filter(id=entity_id).update(key=vendor_id)


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0007_sample_provenance"),
        ("inventory", "0004_chip_identity_mig_absence"),
    ]

    operations = [migrations.RunPython(rekey, migrations.RunPython.noop)]
