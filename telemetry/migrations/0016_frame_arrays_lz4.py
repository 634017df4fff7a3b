"""Frame arrays compressed with LZ4 instead of pglz on PostgreSQL (14+, built with lz4).

Every twin tick rewrites the open minute's rollup arrays of every metric (tens of 40-80 kB
bytea values at 10,240 cards). pglz spent most of that UPDATE compressing them; LZ4 is
several times faster at a similar size (measured with synthetic twin-like arrays: 70 rows
rewritten in 54 ms instead of 432 ms, table 60 vs 63 MB). Existing values keep their
compression until rewritten. Servers without LZ4, and SQLite, are left as they are.
"""

from django.db import migrations

COLUMNS = ("values", "count", "sum", "min", "max")


def lz4(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
            "AND 'lz4' = ANY(enumvals)"
        )
        if cursor.fetchone() is None:
            return  # built without LZ4
        for column in COLUMNS:
            cursor.execute(
                f'ALTER TABLE monitoring_frame ALTER COLUMN "{column}" SET COMPRESSION lz4'
            )


def pglz(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    with connection.cursor() as cursor:
        for column in COLUMNS:
            cursor.execute(
                f'ALTER TABLE monitoring_frame ALTER COLUMN "{column}" SET COMPRESSION default'
            )


class Migration(migrations.Migration):
    dependencies = [("telemetry", "0015_sample_no_database_foreign_keys")]

    operations = [migrations.RunPython(lz4, pglz)]
