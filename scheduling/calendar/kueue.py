"""Apply a calendar window to a Kueue ClusterQueue: the nominal quota of one resource of one
flavor becomes the window's (``day_quota`` by day, ``night_quota`` by night), then the
ClusterQueue is read back. The change is a JSON merge patch of ``spec.resourceGroups`` (a list,
so the patch carries the whole list with the one quota changed) through the official client;
no API server runs here, so it is tested against recorded objects (docs/architecture.md)."""

from __future__ import annotations

import copy
from datetime import datetime

from django.utils.translation import gettext as _
from kubernetes import client as k8s

from scheduling.calendar.slurm import ApplyRefused
from scheduling.calendar.windows import DayWindow
from scheduling.kubernetes.client import CUSTOM, KubernetesClient, _check_outbound
from scheduling.slurm.client import SchedulerError


def _quota(queue: dict, flavor: str, resource: str) -> tuple[list, dict | None]:
    groups = copy.deepcopy((queue.get("spec") or {}).get("resourceGroups") or [])
    for group in groups:
        for fl in group.get("flavors") or []:
            if fl.get("name") != flavor:
                continue
            for res in fl.get("resources") or []:
                if res.get("name") == resource:
                    return groups, res
    return groups, None


def _as_int(quantity) -> int | None:
    try:
        return int(str(quantity))
    except (TypeError, ValueError):
        return None  # "8k", "1500m": not a card count


def apply_kueue_quota(
    client: KubernetesClient,
    *,
    cluster_queue: str,
    flavor: str,
    resource: str,
    day_quota: int,
    night_quota: int,
    window: DayWindow,
    now: datetime,
) -> dict:
    """One step (asked vs confirmed) setting the quota of the window ``now`` falls in."""
    in_day = window.in_day(now)
    asked = {
        "window": "day" if in_day else "night",
        "flavor": flavor,
        "resource": resource,
        "nominal_quota": day_quota if in_day else night_quota,
    }
    step = {
        "kind": "quota",
        "target": cluster_queue,
        "asked": asked,
        "confirmed": None,
        "ok": False,
        "error": "",
    }
    group, version, plural = CUSTOM["cluster_queues"]
    _check_outbound(client.configuration.host, client.timeout)
    with k8s.ApiClient(client.configuration) as api_client:
        api = k8s.CustomObjectsApi(api_client)
        queue = client._call(
            plural, api.get_cluster_custom_object, group, version, plural, cluster_queue
        )
        groups, entry = _quota(queue if isinstance(queue, dict) else {}, flavor, resource)
        if entry is None:
            raise SchedulerError(
                _("ClusterQueue %(q)s has no quota for %(r)s in flavor %(f)s.")
                % {"q": cluster_queue, "r": resource, "f": flavor}
            )
        entry["nominalQuota"] = asked["nominal_quota"]
        try:
            api.patch_cluster_custom_object(
                group,
                version,
                plural,
                cluster_queue,
                {"spec": {"resourceGroups": groups}},
                _request_timeout=client.timeout,
            )
        except k8s.ApiException as exc:
            if exc.status in (401, 403):  # the ServiceAccount may not patch: nothing changed
                raise ApplyRefused(
                    _(
                        "The API server refused to patch ClusterQueue %(q)s (HTTP %(s)s): the "
                        "token needs patch on clusterqueues.kueue.x-k8s.io."
                    )
                    % {"q": cluster_queue, "s": exc.status}
                ) from None
            step["error"] = _("Patch refused: HTTP %(s)s (%(r)s).") % {
                "s": exc.status,
                "r": exc.reason,
            }
        back = client._call(
            plural, api.get_cluster_custom_object, group, version, plural, cluster_queue
        )
    _groups, confirmed = _quota(back if isinstance(back, dict) else {}, flavor, resource)
    quota = _as_int(confirmed.get("nominalQuota")) if confirmed else None
    step["confirmed"] = {
        "window": asked["window"],
        "flavor": flavor,
        "resource": resource,
        "nominal_quota": quota,
    }
    step["ok"] = not step["error"] and quota == asked["nominal_quota"]
    if not step["ok"] and not step["error"]:
        step["error"] = _("The ClusterQueue's quota read back differs from what was asked.")
    return step
