"""Shared pieces of the calendar tests: actors for each role and a user holding both the
operator and the approver role (the four-eyes rule must hold even for them)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from accounts.models import User
from accounts.services.actor import Actor
from accounts.services.roles import ROLE_APPROVER, ROLE_OPERATOR, roles_ensure


def actor(user) -> Actor:
    return Actor(principal=user, ip="127.0.0.1")


def both_roles_user(username: str = "op-appr") -> User:
    groups = roles_ensure()
    user = User.objects.create_user(username=username, password="x", is_staff=True)
    user.groups.add(groups[ROLE_OPERATOR], groups[ROLE_APPROVER])
    return user


def day_around_now(now: datetime | None = None) -> tuple[time, time]:
    """A UTC day window from an hour ago to two hours ahead (minutes: Slurm's resolution)."""
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    return (now - timedelta(hours=1)).time(), (now + timedelta(hours=2)).time()
