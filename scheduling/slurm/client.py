"""slurmrestd over the portal's one outbound call (the outbound network policy, one deadline
per request, a capped body). Every answer is checked for ``errors[]``: slurmrestd answers
HTTP 200 with a non-empty ``errors`` list when it failed."""

from __future__ import annotations

import json
import os
import re
import urllib.parse

from django.utils.translation import gettext as _

from cluster_portal.web.outbound import (
    OutboundRefused,
    OutboundTimeout,
    ResponseTooLarge,
    outbound_request,
)

MAX_BYTES = 64 * 1024 * 1024  # a full job list of a large cluster; beyond that, refused
_VERSION_PATH = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/")


class SchedulerError(Exception):
    """The scheduler could not be read (down, refused, garbage, ``errors[]``, no known API
    version). The message says what, in a few words, and never carries the token.
    ``error_numbers`` holds Slurm's error numbers when slurmrestd reported ``errors[]``."""

    error_numbers: frozenset[int] | set[int] = frozenset()


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version[1:].split("."))


class SlurmClient:
    """Reads one source's slurmrestd; the JWT comes from the environment variable it names."""

    def __init__(self, *, base_url: str, user_name: str, token_env: str, timeout: float) -> None:
        token = os.environ.get(token_env, "")
        if not token:
            raise SchedulerError(
                _("The environment variable %(name)s holding the token is not set.")
                % {"name": token_env}
            )
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        # Filled by :meth:`api_version`: the paths the server's ``/openapi/v3`` offers.
        self.offered_paths: frozenset[str] = frozenset()
        self.headers = {"X-SLURM-USER-NAME": user_name, "X-SLURM-USER-TOKEN": token,
                        "Accept": "application/json"}  # fmt: skip

    def get(self, path: str, params: dict | None = None) -> dict | None:
        """The decoded answer, or ``None`` for 304 (nothing changed since ``update_time``)."""
        return self._request(path, params=params)

    def post(self, path: str, body: dict) -> dict | None:
        """POST ``body`` as JSON (a job update); the decoded answer, ``errors[]`` checked."""
        return self._request(path, body=body)

    def _request(self, path: str, *, params: dict | None = None, body: dict | None = None):
        url = self.base_url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = self.headers
        if body is not None:
            headers = {**headers, "Content-Type": "application/json"}
        try:
            response = outbound_request(
                url, deadline_seconds=self.timeout, max_bytes=MAX_BYTES, headers=headers,
                method="GET" if body is None else "POST",
                data=None if body is None else json.dumps(body).encode(),
            )  # fmt: skip
        except OutboundRefused:
            raise SchedulerError(
                _("%(path)s: refused by the outbound policy.") % {"path": path}
            ) from None
        except OutboundTimeout as exc:
            raise SchedulerError(f"{path}: {exc}") from None
        except ResponseTooLarge as exc:
            raise SchedulerError(f"{path}: {exc}") from None
        except OSError as exc:
            raise SchedulerError(
                _("%(path)s: unreachable (%(why)s).") % {"path": path, "why": exc.strerror or exc}
            ) from None
        except Exception as exc:  # http.client.HTTPException: a malformed answer
            raise SchedulerError(
                _("%(path)s: malformed HTTP answer (%(why)s).")
                % {"path": path, "why": type(exc).__name__}
            ) from None
        if response.status == 304:
            return None
        try:
            answer = json.loads(response.body)
        except ValueError:
            answer = None
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if errors:
            described = "; ".join(
                str(e.get("error") or e.get("description") or e) if isinstance(e, dict) else str(e)
                for e in errors[:3]
            )
            error = SchedulerError(
                _("%(path)s: slurmrestd reported errors: %(errors)s")
                % {"path": path, "errors": described[:500]}
            )
            # Slurm's own error numbers (2010: "Invalid user id", the token's user may not
            # act on that job): callers that write tell a missing right from a failure.
            error.error_numbers = {e.get("error_number") for e in errors if isinstance(e, dict)} - {
                None
            }
            raise error
        if response.status != 200:
            raise SchedulerError(
                _("%(path)s: slurmrestd answered HTTP %(status)s.")
                % {"path": path, "status": response.status}
            )
        if not isinstance(answer, dict):
            raise SchedulerError(_("%(path)s: the answer is not a JSON object.") % {"path": path})
        return answer

    def api_version(self, known: tuple[str, ...]) -> str:
        """The newest REST API version both the server (``/openapi/v3``) and the portal know."""
        spec = self.get("/openapi/v3")
        paths = spec.get("paths") if isinstance(spec, dict) else None
        if not isinstance(paths, dict):
            raise SchedulerError(_("/openapi/v3: no paths in the answer."))
        offered = sorted(
            {m.group(1) for p in paths if (m := _VERSION_PATH.match(p))}, key=_version_key
        )
        self.offered_paths = frozenset(paths)
        usable = [v for v in offered if v in known]
        if not usable:
            raise SchedulerError(
                _("slurmrestd offers API version(s) %(offered)s; the portal knows %(known)s.")
                % {"offered": ", ".join(offered) or _("none"), "known": ", ".join(known)}
            )
        return usable[-1]
