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

**One wall-clock deadline** (:func:`outbound_request`, the call every outbound client uses:
scrapes, webhooks, PromQL, the traffic routers; :func:`socket_exchange` for HAProxy's socket).
urllib's ``timeout`` bounds each socket operation, so a peer trickling one byte a second never
trips it and can hold a worker for as long as it likes. Here the deadline is fixed once, when
the call starts, and every socket operation — DNS, connect, TLS handshake, sending the request,
each read of the status line, headers and body, and every redirect — is given only the time that
is left. Past it the call raises :class:`OutboundTimeout`. We keep urllib and arm the socket
ourselves rather than take an HTTP library: requests, httpx and urllib3 all offer per-operation
(connect/read) timeouts only, none a total deadline, and the connect-time address check above
has to sit on the socket anyway. The body is read up to a cap (:class:`ResponseTooLarge` beyond
it), so a huge answer is refused before it is held in memory.
"""

from __future__ import annotations

import concurrent.futures
import functools
import http.client
import ipaddress
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache

from django.conf import settings

REFUSED = "refused by policy"


class OutboundRefused(OSError):
    """The destination is not allowed by the outbound policy."""

    def __init__(self) -> None:
        super().__init__(REFUSED)

    def __str__(self) -> str:
        return REFUSED


class OutboundTimeout(TimeoutError):
    """The whole call (DNS, connect, headers and body) did not finish within its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


class ResponseTooLarge(ValueError):
    """The answer is larger than the caller's cap; nothing beyond the cap was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"answer larger than {limit:,} bytes")
        self.limit = limit


class Deadline:
    """A point in monotonic time after which an outbound call gives up."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.at = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left; raises :class:`OutboundTimeout` once none are."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise OutboundTimeout(self.seconds)
        return left

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.at


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


class _DeadlineArmed:
    """Gives every send and receive only the time left before the socket's deadline.

    Mixed into a plain and a TLS socket class; a TLS read or write (which may span several
    records) is bounded by what is left, as CPython bounds one call's retries by the socket
    timeout."""

    deadline: Deadline | None = None

    def _arm(self) -> None:
        if self.deadline is not None:
            super().settimeout(self.deadline.remaining())

    def recv(self, *args):
        self._arm()
        return super().recv(*args)

    def recv_into(self, *args):
        self._arm()
        return super().recv_into(*args)

    def send(self, *args):
        self._arm()
        return super().send(*args)

    def sendall(self, *args):
        self._arm()
        return super().sendall(*args)


class _DeadlineSocket(_DeadlineArmed, socket.socket):
    """A plain socket bounded by its deadline."""


class _DeadlineSSLSocket(_DeadlineArmed, ssl.SSLSocket):
    """A TLS socket bounded by its deadline (``read`` is TLS's own receive)."""

    def read(self, *args):
        self._arm()
        return super().read(*args)


# getaddrinfo() takes no timeout: it runs on a small pool so the caller waits at most until its
# deadline (a hung resolver keeps only a pool thread, which the OS resolver frees eventually).
_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="resolve")


def _resolve(host: str, port: int, deadline: Deadline | None) -> list:
    if deadline is None:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    future = _RESOLVER.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        return future.result(timeout=deadline.remaining())
    except concurrent.futures.TimeoutError:
        raise OutboundTimeout(deadline.seconds) from None


def _connect(
    host: str, port: int, timeout: float | None, deadline: Deadline | None = None
) -> socket.socket:
    """A socket to the first allowed address of ``host``; OutboundRefused if none is."""
    try:
        infos = _resolve(host, port, deadline)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve the host ({exc.strerror})") from None
    last: OSError | None = None
    refused = False
    for family, kind, proto, _name, address in infos:
        if not address_allowed(address[0]):
            refused = True
            continue
        sock = _DeadlineSocket(family, kind, proto)
        try:
            if deadline is not None:
                sock.settimeout(deadline.remaining())
            elif timeout is not None:
                sock.settimeout(timeout)
            sock.connect(address)
            sock.deadline = deadline
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    if refused and last is None:
        raise OutboundRefused()
    raise last or OSError("no address to connect to")


class _GuardedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, deadline: Deadline | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        self.sock = _connect(self.host, self.port, self.timeout, self.deadline)


class _GuardedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: Deadline | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        sock = _connect(self.host, self.port, self.timeout, self.deadline)
        context = self._context if hasattr(self, "_context") else _tls_context()
        if self.deadline is not None:
            # The handshake runs inside wrap_socket with the socket's timeout: what is left.
            sock.settimeout(self.deadline.remaining())
        tls = context.wrap_socket(sock, server_hostname=self.host)
        if isinstance(tls, _DeadlineSSLSocket):
            tls.deadline = self.deadline
        self.sock = tls


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline | None = None) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req):
        return self.do_open(functools.partial(_GuardedHTTPConnection, deadline=self.deadline), req)


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    # Built once (loading the CA store costs milliseconds); shared, as SSLContext is thread-safe.
    context = ssl.create_default_context()
    context.sslsocket_class = _DeadlineSSLSocket
    return context


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline | None = None) -> None:
        super().__init__(context=_tls_context())
        self.deadline = deadline

    def https_open(self, req):
        return self.do_open(
            functools.partial(_GuardedHTTPSConnection, deadline=self.deadline),
            req,
            context=self._context,
        )


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise OutboundRefused()
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def outbound_opener(deadline: Deadline | None = None) -> urllib.request.OpenerDirector:
    """A urllib opener speaking only guarded http/https, following at most 5 redirects.

    With ``deadline`` every connection it opens (redirects included) shares that deadline;
    prefer :func:`outbound_request`, which also bounds and reads the body.
    """
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler({}),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _HttpOnlyRedirects(),
        urllib.request.HTTPErrorProcessor(),
        _GuardedHTTPHandler(deadline),
        _GuardedHTTPSHandler(deadline),
    ):
        opener.add_handler(handler)
    return opener


@dataclass(frozen=True)
class OutboundResponse:
    """A complete answer: status, headers and the (capped) body."""

    status: int
    headers: Message
    body: bytes


READ_CHUNK = 64 * 1024


def outbound_request(
    url: str,
    *,
    deadline_seconds: float,
    max_bytes: int,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    read_body: bool = True,
) -> OutboundResponse:
    """The portal's one outbound HTTP call: guarded, one deadline, a capped body.

    Everything — resolving, connecting, TLS, sending, status line, headers, body and any
    redirect — finishes within ``deadline_seconds`` of the call, or :class:`OutboundTimeout`
    is raised. An HTTP error status is returned, not raised (callers decide what it means).
    Raises :class:`OutboundRefused` (policy), :class:`OutboundTimeout`,
    :class:`ResponseTooLarge` (more than ``max_bytes``; a declared ``Content-Length`` over it
    is refused before reading), ``OSError`` (refused, reset, unresolvable) or
    ``http.client.HTTPException`` (a malformed answer). ``read_body=False`` closes the
    connection after the headers (webhooks need only the status).
    """
    deadline = Deadline(deadline_seconds)
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        try:
            response = outbound_opener(deadline).open(request, timeout=deadline_seconds)
        except urllib.error.HTTPError as error:  # 4xx/5xx: still an answer
            response = error
        except urllib.error.URLError as exc:
            if refused_by_policy(exc):
                raise OutboundRefused() from None
            reason = exc.reason
            if isinstance(reason, OSError):
                raise reason from None
            raise OSError(str(reason)) from None
        with response:
            status = response.status if hasattr(response, "status") else response.code
            body = _read_capped(response, max_bytes) if read_body else b""
            return OutboundResponse(status=status, headers=response.headers, body=body)
    except OutboundTimeout:
        raise
    except TimeoutError:
        raise OutboundTimeout(deadline_seconds) from None
    except OSError:
        if deadline.expired:  # a reset or EOF caused by our own give-up is still a timeout
            raise OutboundTimeout(deadline_seconds) from None
        raise


def unix_socket_allowed(path: str) -> bool:
    """Whether a local socket path lies inside a directory the operator listed in
    ``ROUTER_SOCKET_DIRS``. The path is resolved (symlinks, ``..``) before the check, so a
    link inside the directory cannot lead to the database's or the broker's socket."""
    if not path.startswith("/"):
        return False
    real = os.path.realpath(path)
    for directory in getattr(settings, "ROUTER_SOCKET_DIRS", ()) or ():
        root = os.path.realpath(directory)
        if real.startswith(root.rstrip("/") + "/"):
            return True
    return False


def stream_address_refused(address: str) -> bool:
    """A save-time check of a ``unix:/path`` or ``host:port`` stream address: a socket outside
    the operator's socket directories, or a literal host the outbound policy refuses. (Names
    are checked again where it counts, on the address dialled, at connect time.)"""
    if address.startswith("unix:"):
        return not unix_socket_allowed(address[5:])
    host = address.rpartition(":")[0].strip("[]").lower()
    if not host:
        return True
    return url_host_refused(f"tcp://[{host}]/" if ":" in host else f"tcp://{host}/")


def socket_exchange(
    address: str, payload: bytes, *, deadline_seconds: float, max_bytes: int
) -> bytes:
    """Send ``payload`` on a stream socket and read the answer until the peer closes it.

    For line protocols such as HAProxy's Runtime API (one command line, answer, close).
    ``address`` is ``unix:/path`` (a local socket, only inside ``ROUTER_SOCKET_DIRS``) or
    ``host:port`` (dialled through the same outbound policy as HTTP). One wall-clock deadline
    covers resolving, connecting, sending and every read; past it :class:`OutboundTimeout`.
    More than ``max_bytes`` of answer raises :class:`ResponseTooLarge`.
    """
    deadline = Deadline(deadline_seconds)
    try:
        if address.startswith("unix:"):
            if not unix_socket_allowed(address[5:]):
                raise OutboundRefused
            sock = _DeadlineSocket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(deadline.remaining())
                sock.connect(address[5:])
            except BaseException:
                sock.close()
                raise
            sock.deadline = deadline
        else:
            host, _sep, port = address.rpartition(":")
            sock = _connect(host.strip("[]"), int(port), None, deadline)
        with sock:
            sock.sendall(payload)
            chunks: list[bytes] = []
            size = 0
            while chunk := sock.recv(READ_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise ResponseTooLarge(max_bytes)
                chunks.append(chunk)
            return b"".join(chunks)
    except OutboundTimeout:
        raise
    except TimeoutError:
        raise OutboundTimeout(deadline_seconds) from None


def _read_capped(response, max_bytes: int) -> bytes:
    declared = response.headers.get("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(max_bytes)
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(min(READ_CHUNK, max_bytes + 1 - size)):
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


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


def validate_outbound_url(value: str) -> None:
    """The one save-time URL check (a model field validator, so the API, the admin and every
    form run it): http(s) only, and not a literal address the outbound policy refuses."""
    from django.core.exceptions import ValidationError
    from django.utils.translation import gettext as _

    scheme = urllib.parse.urlsplit(value or "").scheme.lower()
    if scheme not in ("http", "https"):
        raise ValidationError(_("Only http and https URLs are allowed."), code="scheme")
    if url_host_refused(value):
        raise ValidationError(
            _("Address refused by the outbound policy (OUTBOUND_ALLOWED_NETWORKS)."),
            code="refused",
        )
