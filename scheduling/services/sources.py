"""Writes to scheduler sources and account mappings (operators only; the API and the admin
both call these). Validation is the models' own (``full_clean``)."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Tenant
from inventory.models import Cluster
from scheduling.models import SchedulerAccountMapping, SchedulerSource

SOURCE_FIELDS = ("kind", "base_url", "user_name", "token_env", "timeout_seconds", "enabled")


@transaction.atomic
def scheduler_source_create(
    *,
    cluster: Cluster,
    base_url: str,
    user_name: str,
    token_env: str,
    kind: str = SchedulerSource.Kind.SLURM,
    timeout_seconds: float = 10.0,
    enabled: bool = True,
) -> SchedulerSource:
    source = SchedulerSource(
        cluster=cluster, kind=kind, base_url=base_url, user_name=user_name,
        token_env=token_env, timeout_seconds=timeout_seconds, enabled=enabled,
    )  # fmt: skip
    source.full_clean()
    source.save()
    return source


@transaction.atomic
def scheduler_source_update(*, source: SchedulerSource, **changes) -> SchedulerSource:
    unknown = set(changes) - set(SOURCE_FIELDS)
    if unknown:
        raise TypeError(f"not editable: {sorted(unknown)}")
    for name, value in changes.items():
        setattr(source, name, value)
    if {"base_url", "kind"} & set(changes):
        # Another server: its API version and job watermark are not this one's.
        source.api_version, source.jobs_update_time = "", None
    source.full_clean(exclude=["cluster"])
    source.save()
    return source


@transaction.atomic
def scheduler_source_delete(*, source: SchedulerSource) -> None:
    source.delete()


def _full_poll_next(cluster: Cluster) -> None:
    # Jobs refused for an unmapped account are read again only in a full answer.
    SchedulerSource.objects.filter(cluster=cluster).update(jobs_update_time=None)


@transaction.atomic
def scheduler_account_mapping_create(
    *, cluster: Cluster, account: str, tenant: Tenant
) -> SchedulerAccountMapping:
    mapping = SchedulerAccountMapping(cluster=cluster, account=account, tenant=tenant)
    mapping.full_clean()
    mapping.save()
    _full_poll_next(cluster)
    return mapping


@transaction.atomic
def scheduler_account_mapping_update(
    *, mapping: SchedulerAccountMapping, tenant: Tenant
) -> SchedulerAccountMapping:
    mapping.tenant = tenant
    mapping.full_clean()
    mapping.save()
    _full_poll_next(mapping.cluster)
    return mapping


@transaction.atomic
def scheduler_account_mapping_delete(*, mapping: SchedulerAccountMapping) -> None:
    mapping.delete()
