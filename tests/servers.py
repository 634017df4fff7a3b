"""Throwaway Redis and PostgreSQL servers for fault-tolerance tests.

The shared servers on 6379 and 5432 are never stopped by a test: a test that needs to kill or
restart a broker or a database starts its own on a free port, in a temporary directory, and
removes it afterwards. ``RedisServer`` keeps nothing on disk (``--save "" --appendonly no``),
so a restart comes back empty, as a crashed cache-only Redis would. ``PostgresCluster`` runs
``initdb``/``pg_ctl`` from the installed PostgreSQL (as the ``postgres`` user when the tests
run as root, because initdb refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from cluster_portal.env import tcp_reachable

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def redis_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    """A private, non-persistent redis-server on its own port; stop and start it at will."""

    def __init__(self, port: int | None = None) -> None:
        binary = redis_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait(lambda: tcp_reachable("127.0.0.1", self.port), 15, f"redis on {self.port}")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        _wait(lambda: not tcp_reachable("127.0.0.1", self.port), 10, f"redis {self.port} down")


def postgres_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresCluster:
    """A private PostgreSQL cluster (trust auth, user ``postgres``) in a temporary directory."""

    def __init__(self) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="portal-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"
        )

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        command = ["runuser", "-u", "postgres", "--", *args] if self.as_root else list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stdout}\n{done.stderr}")
        return done

    def _ctl(self, action: str, *extra: str) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            action,
            *extra,
        )

    def start(self) -> PostgresCluster:
        self._ctl("start")
        return self

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every open connection is terminated."""
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._ctl("stop", "-m", "fast")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class WebServer:
    """``gunicorn cluster_portal.wsgi`` on a free port, as production runs it (several processes)."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        workers: int = 2,
        threads: int = 4,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                *extra_args,
                "cluster_portal.wsgi",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--bind",
                f"127.0.0.1:{self.port}",
                "--graceful-timeout",
                "5",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        _wait(self._ready, 60, f"gunicorn on {self.port}")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited: {''.join(self.lines)}")
        return tcp_reachable("127.0.0.1", self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def prometheus_binary() -> str | None:
    """Debian's ``prometheus`` package (``make test`` installs it when it runs as root)."""
    return shutil.which("prometheus")


class PrometheusServer:
    """A real Prometheus on a free port with its TSDB in ``directory``; stop and start it
    again on the same data (a restart replays its WAL, as in production)."""

    def __init__(self, directory: Path, config: str) -> None:
        binary = prometheus_binary()
        if binary is None:
            raise RuntimeError("prometheus is not installed")
        self.binary, self.directory = binary, Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config_path = self.directory / "prometheus.yml"
        self.config_path.write_text(config)
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log = self.directory / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.config_path}",
                    f"--storage.tsdb.path={self.directory / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--web.enable-lifecycle",
                    "--log.level=warn",
                ],
                cwd=self.directory,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait(self._ready, 60, f"prometheus on {self.port}")
        return self

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {self.log.read_text()[-3000:]}")
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # SIGTERM: a clean shutdown, as systemd does
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def victoria_metrics_binary() -> str | None:
    """Debian's ``victoria-metrics`` package (single node; ``make test`` installs it as root)."""
    return shutil.which("victoria-metrics")


class VictoriaMetricsServer:
    """A real single-node VictoriaMetrics on a free port with its data in ``directory``.

    ``-search.latencyOffset=0s``: by default VictoriaMetrics hides the newest 30 s of samples
    from queries (points still being collected); a test that reads what it just wrote must
    see them. Production keeps the default, and the portal's reads tolerate it (a 30 s older
    newest point is still inside every window the pages read)."""

    def __init__(self, directory: Path) -> None:
        binary = victoria_metrics_binary()
        if binary is None:
            raise RuntimeError("victoria-metrics is not installed")
        self.binary, self.directory = binary, Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log = self.directory / "victoria-metrics.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> VictoriaMetricsServer:
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [
                    self.binary,
                    f"-storageDataPath={self.directory / 'data'}",
                    f"-httpListenAddr=127.0.0.1:{self.port}",
                    "-retentionPeriod=2d",
                    "-search.latencyOffset=0s",
                    "-loggerLevel=WARN",
                ],
                cwd=self.directory,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait(self._ready, 60, f"victoria-metrics on {self.port}")
        return self

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"victoria-metrics exited: {self.log.read_text()[-3000:]}")
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def import_text(self, text: str) -> None:
        """Exposition-format lines (with millisecond timestamps) through VictoriaMetrics' own
        import API, then flushed so queries see them at once."""
        import urllib.request

        request = urllib.request.Request(
            f"{self.url}/api/v1/import/prometheus", data=text.encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            assert response.status == 204, response.status
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=60):
            pass

    def replay_rules(self, rules_file: Path, *, start: float, end: float, step: str) -> None:
        """``rules_file`` evaluated over ``[start, end]`` (unix seconds) by Debian's
        ``vmalert`` in replay mode, written back into this server and flushed. ``step`` is the
        rules' interval: replay steps its range queries by ``-datasource.queryStep`` (5 min
        unless set), so a window shorter than that would record nothing."""
        import urllib.request
        from datetime import UTC, datetime

        binary = shutil.which("vmalert")
        if binary is None:
            raise RuntimeError("vmalert is not installed (Debian's victoria-metrics package)")

        def iso(at: float) -> str:
            return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        done = subprocess.run(
            [binary, f"-rule={rules_file}", f"-datasource.url={self.url}",
             f"-remoteWrite.url={self.url}", f"-replay.timeFrom={iso(start)}",
             f"-replay.timeTo={iso(end)}", f"-datasource.queryStep={step}",
             "-replay.rulesDelay=0s", "-replay.disableProgressBar", "-loggerLevel=ERROR"],
            capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"vmalert replay failed: {(done.stdout + done.stderr)[-3000:]}")
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=120):
            pass

    def wait_for_series(self, expr: str, count: int, timeout: float = 30) -> None:
        """Until ``count(expr)`` answers ``count``: a new series becomes searchable a moment
        after its import, not at once."""
        import json
        import urllib.parse
        import urllib.request

        def ready() -> bool:
            query = urllib.parse.urlencode({"query": f"count({expr})"})
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=30) as r:
                    result = json.load(r)["data"]["result"]
            except OSError:  # a count over 100k fresh series can take a loaded engine long
                return False
            return bool(result) and int(float(result[0]["value"][1])) == count

        _wait(ready, timeout, f"{count} series of {expr}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ExporterFixture:
    """Serves exporter text on 127.0.0.1 (``/dcgm`` and ``/npu``) from callables, so a fixture
    can stamp npu-exporter's millisecond timestamps at request time as the real one does."""

    def __init__(self, pages: dict[str, callable]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.requests: dict[str, int] = dict.fromkeys(pages, 0)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                page = pages.get(self.path)
                if page is None:
                    self.send_error(404)
                    return
                outer.requests[self.path] += 1
                body = page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def target(self, path: str) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class TricklingServer:
    """A real TCP peer that answers HTTP one byte per ``interval`` seconds, for ever.

    ``mode="headers"`` trickles the status line and headers themselves (the answer never
    completes); ``mode="body"`` sends complete headers at once, then a body declared as
    ``declared`` bytes one byte at a time; ``mode="silent"`` accepts and never says anything.
    ``connections`` counts accepted connections and ``open`` those still held; the server
    stops writing to a connection as soon as the peer closes it.
    """

    def __init__(self, *, mode: str = "body", interval: float = 1.0, declared: int = 10**6,
                 content_type: str = "text/plain") -> None:  # fmt: skip
        self.mode, self.interval, self.declared, self.content_type = (
            mode,
            interval,
            declared,
            content_type,
        )
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.open = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self.open += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(0.2)
            try:  # the request line and headers (ignored; a POST body may follow)
                conn.recv(65536)
            except OSError:
                pass
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\n"
                f"Content-Length: {self.declared}\r\n\r\n"
            ).encode()
            if self.mode == "body":
                conn.sendall(head)
                stream = b"#" * self.declared
            elif self.mode == "headers":
                stream = head
            else:
                stream = b""
            position = 0
            while not self._stopped.is_set():
                if position < len(stream):
                    conn.sendall(stream[position : position + 1])
                    position += 1
                if self._peer_closed(conn):
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self.open -= 1
            conn.close()

    def _peer_closed(self, conn: socket.socket) -> bool:
        """Wait one interval; True once the peer has closed (EOF or reset)."""
        deadline = time.monotonic() + self.interval
        while time.monotonic() < deadline:
            conn.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return True
            if not data:
                return True
        return False

    def wait_closed(self, timeout: float) -> bool:
        """Whether every connection the server accepted has been closed by its peer."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.open == 0:
                return True
            time.sleep(0.05)
        return self.open == 0

    def stop(self) -> None:
        self._stopped.set()
        self.listener.close()


def haproxy_binary() -> str | None:
    """Debian's ``haproxy`` package (``make test`` installs it when it runs as root)."""
    return shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None
    )


class HAProxyServer:
    """A real HAProxy on a free loopback port in front of ``servers`` (name → port) in one
    backend, its Runtime API on a unix socket (``level admin``) in ``directory``.

    ``weights`` are the servers' starting weights (default: the first 100, the rest 0).
    Stop and start it at will (a stopped one leaves its socket path dead, as a crashed one).
    """

    def __init__(
        self,
        directory: Path,
        servers: dict[str, int],
        *,
        backend: str = "llm",
        weights: dict[str, int] | None = None,
        balance: str = "roundrobin",
    ) -> None:
        binary = haproxy_binary()
        if binary is None:
            raise RuntimeError("haproxy is not installed")
        self.binary, self.directory, self.backend = binary, Path(directory), backend
        self.directory.mkdir(parents=True, exist_ok=True)
        self.socket = self.directory / "admin.sock"
        self.port = free_port()
        names = list(servers)
        weights = weights or {name: 100 if i == 0 else 0 for i, name in enumerate(names)}
        lines = "\n".join(
            f"    server {name} 127.0.0.1:{port} weight {weights[name]}"
            for name, port in servers.items()
        )
        self.config = self.directory / "haproxy.cfg"
        self.config.write_text(
            f"""global
    stats socket {self.socket} mode 600 level admin
    maxconn 2000
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    option http-server-close
frontend gateway
    bind 127.0.0.1:{self.port}
    default_backend {backend}
backend {backend}
    balance {balance}
{lines}
"""
        )
        self.process: subprocess.Popen | None = None
        self.log = self.directory / "haproxy.log"

    @property
    def address(self) -> str:
        """The Runtime API address as a router names it."""
        return f"unix:{self.socket}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HAProxyServer:
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [self.binary, "-db", "-f", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait(self._ready, 30, f"haproxy on {self.port}")
        return self

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"haproxy exited: {self.log.read_text()[-3000:]}")
        return self.socket.exists() and tcp_reachable("127.0.0.1", self.port)

    def command(self, line: str) -> str:
        """One Runtime API command, answered (what an operator types into socat)."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def weight(self, server: str) -> int:
        return int(self.command(f"get weight {self.backend}/{server}").split()[0])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _reply(handler, status: int, payload: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


class RecordedHTTPServer:
    """A loopback HTTP endpoint answering GETs with recorded bodies: ``routes`` maps a path
    (without its query) to the body; any other path is a 404 with ``missing`` as its body.
    ``seen`` keeps the paths asked, in order."""

    def __init__(self, routes: dict[str, bytes], *, missing: bytes = b"not found") -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.routes, self.seen = routes, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?")[0]
                outer.seen.append(path)
                body = outer.routes.get(path)
                _reply(self, 404 if body is None else 200, missing if body is None else body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ScriptedHTTPServer:
    """A loopback HTTP endpoint answering POSTs from a script: each answer is ``(status,
    body)`` or a callable ``(headers, body) -> (status, body)``; the last answer repeats.
    ``requests`` keeps every request's headers and body (a deploy tool's view of the portal)."""

    def __init__(self, answers: list) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.answers = list(answers)
        self.requests: list[tuple[dict, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = dict(self.headers)
                outer.requests.append((headers, body))
                answer = outer.answers.pop(0) if len(outer.answers) > 1 else outer.answers[0]
                status, text = answer(headers, body) if callable(answer) else answer
                _reply(self, status, text if isinstance(text, bytes) else str(text).encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rollout"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
