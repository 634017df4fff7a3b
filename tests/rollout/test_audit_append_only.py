"""Audit rows are append-only in the database itself: triggers refuse UPDATE and DELETE."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from rollout.db_guard import audit_rows_unlocked
from rollout.models import AuditEntry, AuditImmutable
from rollout.services.audit import Actor, audit_record

TABLE = AuditEntry._meta.db_table


@pytest.fixture
def entry(plan_factory, users) -> AuditEntry:
    plan = plan_factory()
    return audit_record(
        actor=Actor(users["operator"]), action="note", plan=plan, reason="the original reason"
    )


def refused(statement) -> str:
    """Run ``statement`` in a savepoint; return the database's error message."""
    with pytest.raises(IntegrityError) as failure, transaction.atomic():
        statement()
    return str(failure.value)


def raw(sql: str, params=()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def assert_untouched(entry: AuditEntry) -> None:
    row = AuditEntry.objects.get(pk=entry.pk)
    assert (row.reason, row.action, row.actor_id, row.plan_id) == (
        "the original reason",
        "note",
        entry.actor_id,
        entry.plan_id,
    )


@pytest.mark.django_db
def test_inserting_works(entry, users):
    second = audit_record(actor=Actor(users["approver"]), action="note", plan=entry.plan)
    assert AuditEntry.objects.filter(pk__in=[entry.pk, second.pk]).count() == 2


@pytest.mark.django_db
def test_raw_sql_update_is_refused_by_the_database(entry):
    message = refused(lambda: raw(f"UPDATE {TABLE} SET reason = %s WHERE id = %s", ["x", entry.pk]))
    assert "append-only" in message
    assert_untouched(entry)


@pytest.mark.django_db
def test_raw_sql_delete_is_refused_by_the_database(entry):
    message = refused(lambda: raw(f"DELETE FROM {TABLE} WHERE id = %s", [entry.pk]))
    assert "append-only" in message
    assert_untouched(entry)


@pytest.mark.django_db
def test_queryset_update_and_delete_are_refused(entry):
    rows = AuditEntry.objects.filter(pk=entry.pk)
    assert "append-only" in refused(lambda: rows.update(reason="rewritten"))
    assert "append-only" in refused(lambda: rows.delete())
    assert "append-only" in refused(lambda: AuditEntry.objects.all().delete())
    assert_untouched(entry)


@pytest.mark.django_db
def test_the_model_guards_still_refuse_before_any_sql(entry):
    entry.reason = "rewritten"
    with pytest.raises(AuditImmutable):
        entry.save()
    with pytest.raises(AuditImmutable):
        entry.delete()
    assert_untouched(entry)


@pytest.mark.django_db
def test_a_plan_or_user_with_history_cannot_be_deleted(entry):
    with pytest.raises(ProtectedError), transaction.atomic():
        entry.plan.delete()
    with pytest.raises(ProtectedError), transaction.atomic():
        entry.actor.delete()
    assert_untouched(entry)


@pytest.mark.django_db
def test_only_a_sqlite_test_flush_may_empty_the_table(entry):
    """``audit_rows_unlocked`` (used by tests/conftest.py while the test runner flushes the
    database) lifts the SQLite triggers; PostgreSQL's row triggers ignore it — it flushes with
    TRUNCATE, which they do not cover."""
    if connection.vendor == "sqlite":
        with audit_rows_unlocked():
            AuditEntry.objects.filter(pk=entry.pk).delete()
        assert not AuditEntry.objects.filter(pk=entry.pk).exists()
    else:
        with audit_rows_unlocked():
            assert "append-only" in refused(lambda: AuditEntry.objects.filter(pk=entry.pk).delete())
        assert_untouched(entry)
    # Outside the context manager the guard is back on.
    audit_record(actor=Actor(None), action="note", plan=None)
    assert "append-only" in refused(lambda: AuditEntry.objects.all().delete())


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_with_audit_rows_can_still_be_flushed(entry):
    """Teardown of this test flushes the database: on SQLite with DELETE, which must pass."""
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
    assert "append-only" in refused(lambda: AuditEntry.objects.filter(pk=entry.pk).delete())


@pytest.mark.django_db(transaction=True)
def test_the_next_transactional_test_starts_from_an_empty_table():
    assert not AuditEntry.objects.exists()
