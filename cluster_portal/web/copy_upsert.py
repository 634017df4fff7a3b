"""Bulk writes of many rows through PostgreSQL's COPY: the rows go into a temporary table in
one COPY, then one ``INSERT … SELECT … ON CONFLICT`` moves them into the model's table.

Django's ``bulk_create`` spends most of a 20,000-row write building the statement (each value
through ``get_db_prep_save``, then adapted by the driver, on PostgreSQL as arrays for
``UNNEST``); COPY takes the values as psycopg dumps them, and the merge runs inside the server.
The upsert writes only rows that differ (``DO UPDATE … WHERE … IS DISTINCT FROM``), so an
unchanged answer rewrites nothing. Everything runs in the caller's transaction: the temporary
table is dropped at commit, and a worker killed mid-write leaves neither the staged rows nor a
partial merge behind.

Only with psycopg 3 on PostgreSQL (:func:`copy_available`); callers keep an ORM path for SQLite
(the demo) with the same results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection, models, transaction


def copy_available() -> bool:
    """Whether the default connection is PostgreSQL through psycopg 3 (which has ``copy()``)."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    return hasattr(connection.connection.cursor(), "copy")


def copy_upsert(
    *,
    model: type[models.Model],
    fields: Sequence[str],
    rows: Iterable[Sequence],
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
    also: Sequence[str] = (),
) -> int:
    """COPY ``rows`` (one value per name in ``fields``, as the database stores it: JSON as
    its text, datetimes aware) into ``model``'s table and answer how many rows were written.

    ``conflict`` names the unique fields a row is matched on; ``update`` the fields a matched
    row takes from the new one — written only where one of them differs; ``also`` names fields
    taken along with such a change but not compared (a "last changed at"). Without ``update``
    a conflicting row is skipped (``ON CONFLICT DO NOTHING``; without ``conflict`` on any
    unique constraint, as ``bulk_create(ignore_conflicts=True)``). Concrete fields not in
    ``fields`` get their model default, as ``Model()`` would give them."""
    meta = model._meta
    quote = connection.ops.quote_name
    given = [meta.get_field(name) for name in fields]
    columns = [quote(field.column) for field in given]
    defaults = [
        field
        for field in meta.concrete_fields
        if not field.primary_key and field.column not in {f.column for f in given}
    ]
    stage = quote(f"copy_stage_{meta.db_table}")
    target = quote(meta.db_table)
    default_columns = [quote(field.column) for field in defaults]
    default_values = [field.get_db_prep_save(field.get_default(), connection) for field in defaults]
    if update:
        changed = [quote(meta.get_field(name).column) for name in update]
        taken = [*changed, *(quote(meta.get_field(name).column) for name in also)]
        assignments = ", ".join(f"{c} = EXCLUDED.{c}" for c in taken)
        old = ", ".join(f"{target}.{c}" for c in changed)
        new = ", ".join(f"EXCLUDED.{c}" for c in changed)
        # ROW(...) so that a single updated field is still a row comparison.
        on_conflict = (
            f"ON CONFLICT ({', '.join(quote(meta.get_field(n).column) for n in conflict)}) "
            f"DO UPDATE SET {assignments} WHERE ROW({old}) IS DISTINCT FROM ROW({new})"
        )
    elif conflict:
        names = ", ".join(quote(meta.get_field(n).column) for n in conflict)
        on_conflict = f"ON CONFLICT ({names}) DO NOTHING"
    else:
        on_conflict = "ON CONFLICT DO NOTHING"
    with transaction.atomic(), connection.cursor() as cursor:
        # A second write in the same transaction (a test, a retried sync) starts empty.
        cursor.execute(f"DROP TABLE IF EXISTS pg_temp.{stage}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {stage} ON COMMIT DROP AS "
            f"SELECT {', '.join(columns)} FROM {target} WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY {stage} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        select = ", ".join([*columns, *(["%s"] * len(default_values))])
        cursor.execute(
            f"INSERT INTO {target} ({', '.join([*columns, *default_columns])}) "
            f"SELECT {select} FROM {stage} {on_conflict}",
            default_values,
        )
        written = max(cursor.rowcount, 0)
        cursor.execute(f"DROP TABLE {stage}")
    return written
