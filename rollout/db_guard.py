"""The database half of the append-only audit trail.

Migration ``rollout.0002_audit_append_only`` installs triggers that refuse any UPDATE or DELETE
of an ``AuditEntry`` row, whatever issues it — the ORM, a queryset ``update()``/``delete()``, raw
SQL, a database shell — on PostgreSQL and on SQLite.

On SQLite the triggers fire only while ``rollout_audit_locked()`` is true. Django registers
that function on every SQLite connection it opens (``RolloutConfig.ready``); it is true except
inside ``audit_rows_unlocked()``, which exists for one caller: the test runner's flush of the
test database after a transactional test (SQLite empties tables with DELETE, which the
triggers would refuse). A connection opened outside Django lacks the function, so its UPDATE
or DELETE fails too. PostgreSQL flushes with TRUNCATE, which the row triggers leave alone, so
there the function and the context manager play no part.
"""

from __future__ import annotations

import contextlib
import threading

SQLITE_LOCK_FUNCTION = "rollout_audit_locked"

_state = threading.local()


def _locked() -> int:
    return 0 if getattr(_state, "unlocked", False) else 1


@contextlib.contextmanager
def audit_rows_unlocked():
    """For flushing a *test* database on SQLite only; never call it in application code."""
    previous = getattr(_state, "unlocked", False)
    _state.unlocked = True
    try:
        yield
    finally:
        _state.unlocked = previous


def register_sqlite_function(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver: give SQLite connections the trigger's lock function."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(SQLITE_LOCK_FUNCTION, 0, _locked)
