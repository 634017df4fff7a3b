"""Outbound HTTP (webhooks, exporter scrapes) that cannot be pointed at the portal's own network.

Server-side request forgery defence: every connection — the first request and every redirect
— resolves the host name, and connects only to an address that is public, or inside one of
the networks an operator listed in ``OUTBOUND_ALLOWED_NETWORKS``. Loopback, link-local (cloud
metadata at 169.254.169.254), private, shared (CGNAT), multicast, reserved and unspecified
addresses are refused. The check happens at connect time on the address actually dialled, so
DNS rebinding between a check and the connection does not help. Only ``http`` and ``https``
are spoken (no ``file:``, ``ftp:`` or ``data:``, also not through a redirect), and no proxy
from the environment is used.

A refusal raises :class:`OutboundRefused`, whose text is only "refused by policy": callers
store that, never the address, the resolver's answer or the response, so the stored error is
no oracle about the inside network.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import urllib.parse
import urllib.request
from functools import lru_cache

from django.conf import settings

REFUSED = "refused by policy"


class OutboundRefused(OSError):
    """The destination is not allowed by the outbound policy."""

    def __init__(self) -> None:
        super().__init__(REFUSED)

    def __str__(self) -> str:
        return REFUSED


@lru_cache(maxsize=16)
def _networks(spec: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in spec if item.strip())


def allowed_networks() -> tuple:
    return _networks(tuple(getattr(settings, "OUTBOUND_ALLOWED_NETWORKS", ()) or ()))


def address_allowed(address: str) -> bool:
    """Whether an IP address may be dialled: public, or inside an allow-listed network."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in allowed_networks()):
        return True
    return not (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or getattr(ip, "is_site_local", False)
        or not ip.is_global
    )


def _connect(host: str, port: int, timeout: float | None) -> socket.socket:
    """A socket to the first allowed address of ``host``; OutboundRefused if none is."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve the host ({exc.strerror})") from None
    last: OSError | None = None
    refused = False
    for family, kind, proto, _name, address in infos:
        if not address_allowed(address[0]):
            refused = True
            continue
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not None:
                sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    if refused and last is None:
        raise OutboundRefused()
    raise last or OSError("no address to connect to")


class _GuardedHTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        self.sock = _connect(self.host, self.port, self.timeout)


class _GuardedHTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        sock = _connect(self.host, self.port, self.timeout)
        context = self._context if hasattr(self, "_context") else ssl.create_default_context()
        self.sock = context.wrap_socket(sock, server_hostname=self.host)


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_GuardedHTTPConnection, req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_GuardedHTTPSConnection, req)


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise OutboundRefused()
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def outbound_opener() -> urllib.request.OpenerDirector:
    """A urllib opener speaking only guarded http/https, following at most 5 redirects."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler({}),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _HttpOnlyRedirects(),
        urllib.request.HTTPErrorProcessor(),
        _GuardedHTTPHandler(),
        _GuardedHTTPSHandler(),
    ):
        opener.add_handler(handler)
    return opener


def refused_by_policy(exc: BaseException) -> bool:
    """Whether ``exc`` (possibly wrapped in a URLError) is an outbound-policy refusal."""
    return isinstance(exc, OutboundRefused) or isinstance(
        getattr(exc, "reason", None), OutboundRefused
    )


def url_host_refused(url: str) -> bool:
    """A cheap save-time check: the URL names a literal address (or localhost) that is refused.

    The real enforcement is at connect time (names may resolve anywhere); this only lets a
    form say so at once.
    """
    host = (urllib.parse.urlsplit(url).hostname or "").strip("[]").lower()
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return not address_allowed("127.0.0.1")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address_allowed(host)
