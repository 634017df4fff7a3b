"""One read of a cluster through the official ``kubernetes`` client.

The API server's address is the source's ``base_url`` and its bearer token sits in the
environment variable ``token_env`` names (a ServiceAccount token); inside a cluster with that
variable unset, the pod's own ServiceAccount (``load_incluster_config``) is used. Every call
has the source's deadline and no retries; the server's address is checked against the
outbound network policy before any call (urllib3 then dials it itself, so a name that
re-resolves between the check and the dial is not re-checked — a gap the Slurm path, which
dials through ``outbound_request``, does not have).
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from dataclasses import dataclass, field

import urllib3
from django.utils.translation import gettext as _
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from cluster_portal.web.outbound import address_allowed
from scheduling.slurm.client import SchedulerError

# Custom resources read as plain dicts (CustomObjectsApi): (group, version, plural).
KUEUE = "kueue.x-k8s.io", "v1beta1"
VOLCANO = "scheduling.volcano.sh", "v1beta1"
CUSTOM = {
    "workloads": (*KUEUE, "workloads"),
    "local_queues": (*KUEUE, "localqueues"),
    "cluster_queues": (*KUEUE, "clusterqueues"),
    "volcano_queues": (*VOLCANO, "queues"),
    "pod_groups": (*VOLCANO, "podgroups"),
}


@dataclass
class ClusterAnswer:
    """Everything one sync reads: typed core objects, custom resources as dicts (an empty
    list when the cluster does not run Kueue or Volcano: their CRDs answer 404)."""

    version: str
    pods: list[k8s.V1Pod]
    nodes: list[k8s.V1Node]
    custom: dict[str, list[dict]] = field(default_factory=dict)


def _configuration(base_url: str, token_env: str) -> k8s.Configuration:
    configuration = k8s.Configuration()
    token = os.environ.get(token_env, "")
    if token:
        configuration.host = base_url.rstrip("/")
        # "BearerToken" since client 36; "authorization" before (the client honours both).
        configuration.api_key = {"BearerToken": token, "authorization": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer", "authorization": "Bearer"}
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)
    else:
        raise SchedulerError(
            _("The environment variable %(name)s holding the token is not set.")
            % {"name": token_env}
        )
    configuration.retries = False  # one attempt per call, within the deadline
    return configuration


def _check_outbound(host_url: str, timeout: float) -> None:
    parts = urllib.parse.urlsplit(host_url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, port)}
    except OSError as exc:
        raise SchedulerError(
            _("%(host)s: unreachable (%(why)s).") % {"host": host, "why": exc.strerror or exc}
        ) from None
    if not addresses or not all(address_allowed(a) for a in addresses):
        raise SchedulerError(_("%(host)s: refused by the outbound policy.") % {"host": host})


class KubernetesClient:
    """Reads one cluster's API server; raises :class:`SchedulerError` naming what failed."""

    def __init__(self, *, base_url: str, token_env: str, timeout: float) -> None:
        self.configuration = _configuration(base_url, token_env)
        self.timeout = timeout

    def _call(self, what: str, call, *args, missing_ok: bool = False):
        """``call(*args)`` within the deadline; ``None`` for a 404 when ``missing_ok``."""
        try:
            return call(*args, _request_timeout=self.timeout)
        except k8s.ApiException as exc:
            if exc.status == 404 and missing_ok:
                return None
            if exc.status == 0:  # the client's own wrapping of an SSL or protocol failure
                raise SchedulerError(
                    _("%(what)s: unreachable (%(why)s).") % {"what": what, "why": exc.reason}
                ) from None
            raise SchedulerError(
                _("%(what)s: the API server answered HTTP %(status)s (%(reason)s).")
                % {"what": what, "status": exc.status, "reason": exc.reason}
            ) from None
        except urllib3.exceptions.HTTPError as exc:
            raise SchedulerError(
                _("%(what)s: unreachable (%(why)s).") % {"what": what, "why": type(exc).__name__}
            ) from None
        except (ValueError, TypeError, AttributeError, KeyError):
            # The client's deserializer met something that is not the object it expects.
            raise SchedulerError(
                _("%(what)s: the answer is not a Kubernetes object list.") % {"what": what}
            ) from None

    def _custom(self, api: k8s.CustomObjectsApi, name: str) -> list[dict]:
        group, version, plural = CUSTOM[name]
        answer = self._call(
            plural, api.list_cluster_custom_object, group, version, plural, missing_ok=True
        )
        if answer is None:  # the CRD is not installed: no Kueue (or no Volcano) here
            return []
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise SchedulerError(
                _("%(what)s: the answer is not a Kubernetes object list.") % {"what": plural}
            )
        return items

    def read(self) -> ClusterAnswer:
        """Version, pods, nodes and the Kueue/Volcano objects, or :class:`SchedulerError`."""
        _check_outbound(self.configuration.host, self.timeout)
        with k8s.ApiClient(self.configuration) as api_client:
            version = self._call("/version", k8s.VersionApi(api_client).get_code)
            core = k8s.CoreV1Api(api_client)
            pods = self._call("pods", core.list_pod_for_all_namespaces)
            nodes = self._call("nodes", core.list_node)
            custom_api = k8s.CustomObjectsApi(api_client)
            custom = {name: self._custom(custom_api, name) for name in CUSTOM}
        if not isinstance(pods, k8s.V1PodList) or not isinstance(nodes, k8s.V1NodeList):
            raise SchedulerError(_("pods, nodes: the answer is not a Kubernetes object list."))
        if not isinstance(version, k8s.VersionInfo) or not version.git_version:
            raise SchedulerError(_("/version: the answer names no version."))
        return ClusterAnswer(version.git_version, pods.items, nodes.items, custom)
