"""What every mechanism shares: its saved fields, its counters, its invariant failures."""

from __future__ import annotations

from typing import Any, ClassVar


class InvariantError(AssertionError):
    """A mechanism's state broke one of its invariants (names the mechanism and the rule).

    An ``AssertionError`` subclass raised explicitly, so the checks also run under ``-O``.
    """


class Mechanism:
    """Base of the mechanisms: ``STATE`` names the saved fields, ``COUNTERS`` the counters
    it owns (cumulative, in ``self.counters``); everything else is bound, not saved."""

    STATE: ClassVar[tuple[str, ...]] = ()
    COUNTERS: ClassVar[dict[str, float]] = {}

    def _new_counters(self) -> None:
        self.counters: dict[str, Any] = dict(self.COUNTERS)

    def fields(self) -> dict[str, Any]:
        """The saved fields (the mechanism's slice of the state), by name."""
        return {name: getattr(self, name) for name in (*self.STATE, "counters")}

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Mechanism:
        """Rebuild from :meth:`fields` (missing counters start at zero); no code runs."""
        obj = cls.__new__(cls)
        missing = [name for name in cls.STATE if name not in fields]
        if missing:
            raise ValueError(f"state: {cls.__name__} lacks {', '.join(missing)}")
        for name in cls.STATE:
            setattr(obj, name, fields[name])
        obj.counters = {**cls.COUNTERS, **fields.get("counters", {})}
        return obj

    def fail(self, rule: str) -> None:
        """Raise :class:`InvariantError` naming this mechanism and the broken rule."""
        raise InvariantError(f"{type(self).__name__}: {rule}")
