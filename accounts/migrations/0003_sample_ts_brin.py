"""BRIN indexes on time for PostgreSQL only: tiny, and ideal for append-mostly time series."""

from django.db import migrations


def create_brin(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS sample_ts_brin ON monitoring_sample USING brin (ts)"
    )
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS rollup_bucket_brin ON monitoring_rollup USING brin (bucket)"
    )


def drop_brin(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS sample_ts_brin")
    schema_editor.execute("DROP INDEX IF EXISTS rollup_bucket_brin")


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0002_inventory_and_telemetry")]
    operations = [migrations.RunPython(create_brin, drop_brin)]
