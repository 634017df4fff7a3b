"""Audit rows become append-only in the database itself, not only in the model.

A trigger refuses UPDATE and DELETE of ``rollout_auditentry`` rows on PostgreSQL and SQLite.
TRUNCATE is deliberately not blocked: it is a table-owner operation rather than something the
application issues, and Django's test runner empties PostgreSQL test databases with it after
every transactional test (in production, grant the application role no TRUNCATE privilege).

The plan and user an entry refers to become PROTECT instead of SET NULL: nulling the reference
would be an UPDATE of the audit row, which the trigger now refuses, so a plan or user with
history cannot be deleted (deactivate users instead).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "rollout_auditentry"
MESSAGE = "audit rows are append-only"

POSTGRES_INSTALL = [
    f"""
    CREATE OR REPLACE FUNCTION rollout_audit_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION USING
            MESSAGE = '{MESSAGE}: ' || TG_OP || ' on ' || TG_TABLE_NAME || ' refused',
            ERRCODE = 'integrity_constraint_violation';
    END;
    $$
    """,
    f"""
    CREATE TRIGGER rollout_auditentry_append_only
    BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION rollout_audit_append_only()
    """,
]
POSTGRES_REMOVE = [
    f"DROP TRIGGER IF EXISTS rollout_auditentry_append_only ON {TABLE}",
    "DROP FUNCTION IF EXISTS rollout_audit_append_only()",
]
# rollout_audit_locked() is registered by the rollout app on every SQLite connection Django
# opens (rollout/db_guard.py); it is false only while a test database is being flushed.
SQLITE_INSTALL = [
    f"""
    CREATE TRIGGER rollout_auditentry_no_{event.lower()}
    BEFORE {event} ON {TABLE}
    WHEN rollout_audit_locked()
    BEGIN
        SELECT RAISE(ABORT, '{MESSAGE}');
    END
    """
    for event in ("UPDATE", "DELETE")
]
SQLITE_REMOVE = [
    f"DROP TRIGGER IF EXISTS rollout_auditentry_no_{event}" for event in ("update", "delete")
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("rollout", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditentry",
            name="actor",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="user",
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="plan",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="audit_entries",
                to="rollout.migrationplan",
                verbose_name="plan",
            ),
        ),
        migrations.RunPython(
            _run({"postgresql": POSTGRES_INSTALL, "sqlite": SQLITE_INSTALL}),
            _run({"postgresql": POSTGRES_REMOVE, "sqlite": SQLITE_REMOVE}),
        ),
    ]
