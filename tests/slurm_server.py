"""A private, real Slurm 22.05 (Debian's packages) for the scheduler tests.

One controller, two compute daemons on this one host (``gpu-001`` and ``gpu-002``, four fake
``gpu:h100`` cards each whose device files are ``/dev/null``'s numbers, ``npu:910b`` on the
first), and slurmrestd with JWT, all on free ports with their state under one directory; every
process is stopped by its PID. No accounting (slurmdbd/MariaDB): it costs 12-15 s per start
against about 1 s, and the live sync reads only ``/slurm/v0.0.38`` (accounts are then plain
strings, which is all the account → tenant mapping needs). Recipe and traps:
``/work/shared/slurm/README.md``.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.servers import _wait, free_port

PACKAGES = ("slurmctld", "slurmd", "slurmrestd", "sbatch", "scontrol", "munged")
REST_USER = "slurmrest"  # slurmrestd refuses to run as root or as SlurmUser


def slurm_missing() -> str | None:
    """Why a private Slurm cannot start here (None when it can)."""
    missing = [name for name in PACKAGES if shutil.which(name) is None]
    if missing:
        return f"Slurm packages not installed ({', '.join(missing)}; `make slurm` installs them)"
    if os.geteuid() != 0:
        return "a private Slurm needs root (slurmd, munged and the slurmrestd user)"
    return None


def _munge_works(socket_path: Path) -> bool:
    try:
        token = subprocess.run(
            ["munge", "-S", str(socket_path), "-n"], capture_output=True, timeout=10, check=True
        )
        subprocess.run(
            ["unmunge", "-S", str(socket_path)], input=token.stdout, capture_output=True,
            timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return True


class SlurmCluster:
    """Start with :meth:`start`, submit with :meth:`sbatch`, stop with :meth:`stop`."""

    nodes = ("gpu-001", "gpu-002")

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.host = socket.gethostname().split(".")[0]
        self.ctld_port, self.rest_port = free_port(), free_port()
        self.node_ports = [free_port() for _ in self.nodes]
        self.processes: list[subprocess.Popen] = []
        self.rest: subprocess.Popen | None = None
        self.munged_pid: int | None = None
        self.token = ""
        self.rest_conf_dir: Path | None = None
        self.munge_dir: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.root / "etc" / "slurm.conf")}

    # ---- start -------------------------------------------------------------------------
    def _write_config(self) -> None:
        r = self.root
        for sub in ("etc", "state", "log", "dev", "out", *(f"spool-{n}" for n in self.nodes)):
            (r / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "out", 0o1777)
        for i in range(8):
            device = r / "dev" / f"nvidia{i}"
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))
        for i in range(4):
            device = r / "dev" / f"davinci{i}"
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))
        key = r / "state" / "jwt_hs256.key"
        key.write_bytes(secrets.token_bytes(32))
        key.chmod(0o600)
        n1, n2 = self.nodes
        p1, p2 = self.node_ports
        # A private munged (own socket, stopped by PID): another test run's Slurm, or the
        # host's, never shares or stops ours. munged runs as munge, so not under pytest's 0700.
        self.munge_dir = Path(tempfile.mkdtemp(prefix="portal-munge-"))
        shutil.chown(self.munge_dir, "munge", "munge")
        os.chmod(self.munge_dir, 0o755)
        (r / "etc" / "slurm.conf").write_text(
            f"""ClusterName=portaltest
SlurmctldHost={self.host}
SlurmctldPort={self.ctld_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_dir}/munge.sock
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={key}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool-%n
SlurmctldPidFile={r}/state/slurmctld.pid
SlurmdPidFile={r}/state/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,npu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
NodeName={n1} NodeHostname={self.host} Port={p1} CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:h100:4,npu:910b:4
NodeName={n2} NodeHostname={self.host} Port={p2} CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:h100:4
PartitionName=train Nodes={n1},{n2} Default=YES MaxTime=INFINITE State=UP
PartitionName=infer Nodes={n1} MaxTime=INFINITE State=UP PriorityTier=2
"""
        )
        (r / "etc" / "gres.conf").write_text(
            f"""AutoDetect=off
NodeName={n1} Name=gpu Type=h100 File={r}/dev/nvidia[0-3]
NodeName={n1} Name=npu Type=910b File={r}/dev/davinci[0-3]
NodeName={n2} Name=gpu Type=h100 File={r}/dev/nvidia[4-7]
"""
        )
        # slurmrestd runs as its own user and must read slurm.conf, but pytest keeps its
        # temporary folders 0700 (and resets that when another run starts): its copy lives in
        # a readable folder of its own, removed on stop.
        self.rest_conf_dir = Path(tempfile.mkdtemp(prefix="portal-slurmrestd-"))
        os.chmod(self.rest_conf_dir, 0o755)
        for name in ("slurm.conf", "gres.conf"):
            shutil.copy(r / "etc" / name, self.rest_conf_dir / name)
            os.chmod(self.rest_conf_dir / name, 0o644)

    def _spawn(self, args: list[str], log: str, user: str | None = None) -> subprocess.Popen:
        command = ["runuser", "-u", user, "--", *args] if user else args
        with open(self.root / "log" / log, "ab") as out:
            process = subprocess.Popen(
                command, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def _run(self, *args: str, timeout: float = 30) -> str:
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def _log_tail(self) -> str:
        return "\n".join(
            f"== {p.name}\n{p.read_text(errors='replace')[-1500:]}"
            for p in sorted((self.root / "log").glob("*"))
        )

    def _ping(self) -> bool:
        try:
            return "is UP" in self._run("scontrol", "ping", timeout=5)
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def _idle_nodes(self) -> int:
        try:
            out = self._run("sinfo", "-h", "-N", "-o", "%N %T", timeout=5)
        except (RuntimeError, subprocess.TimeoutExpired):
            return 0
        return len({line.split()[0] for line in out.splitlines() if line.endswith("idle")})

    def start(self) -> SlurmCluster:
        self._write_config()
        socket_path = self.munge_dir / "munge.sock"
        subprocess.run(
            ["runuser", "-u", "munge", "--", "munged", f"--socket={socket_path}",
             f"--pid-file={self.munge_dir}/munged.pid", f"--seed-file={self.munge_dir}/seed",
             f"--log-file={self.munge_dir}/munged.log"],
            check=True, timeout=30,
        )  # fmt: skip
        _wait(lambda: (self.munge_dir / "munged.pid").exists(), 30, "munged pid file")
        self.munged_pid = int((self.munge_dir / "munged.pid").read_text().strip())
        _wait(lambda: _munge_works(socket_path), 30, "munged answering")
        try:
            self._spawn(["slurmctld", "-D", "-i"], "slurmctld.out")
            _wait(self._ping, 90, f"slurmctld on {self.ctld_port}")
            for node in self.nodes:
                self._spawn(["slurmd", "-D", "-N", node], f"slurmd-{node}.out")
            _wait(lambda: self._idle_nodes() >= len(self.nodes), 120, "both slurmd idle")
            try:
                pwd.getpwnam(REST_USER)
            except KeyError:
                subprocess.run(
                    ["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", REST_USER],
                    check=True, timeout=30,
                )  # fmt: skip
            self.token = self.new_token()
            # One auth mode per process: SLURM_JWT=daemon, else JWT is refused as a "thread
            # config token". Without slurmdbd only the openapi/v0.0.38 plugin loads.
            self.rest = self._spawn(
                ["env", f"SLURM_CONF={self.rest_conf_dir / 'slurm.conf'}", "SLURM_JWT=daemon",
                 "slurmrestd", "-a", "rest_auth/jwt", "-s", "openapi/v0.0.38",
                 f"127.0.0.1:{self.rest_port}"],
                "slurmrestd.out", user=REST_USER,
            )  # fmt: skip
            _wait(self._rest_answers, 60, f"slurmrestd on {self.rest_port}")
        except Exception as exc:
            tail = self._log_tail()
            self.stop()
            raise RuntimeError(f"{exc}\n{tail}") from None
        return self

    def new_token(self, lifespan: int = 7200) -> str:
        out = self._run("scontrol", "token", f"username={REST_USER}", f"lifespan={lifespan}")
        return out.strip().removeprefix("SLURM_JWT=")

    def _rest_answers(self) -> bool:
        if self.rest is not None and self.rest.poll() is not None:
            raise RuntimeError("slurmrestd exited")
        try:
            self.get("/slurm/v0.0.38/ping")
        except OSError:
            return False
        return True

    # ---- use ---------------------------------------------------------------------------
    def get(self, path: str) -> dict:
        request = urllib.request.Request(
            self.url + path,
            headers={"X-SLURM-USER-NAME": REST_USER, "X-SLURM-USER-TOKEN": self.token},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def sbatch(self, *args: str) -> int:
        """Submit ``sleep`` work; answers the job id."""
        out = self._run(
            "sbatch", "--parsable", "-D", str(self.root / "out"), "-o", "/dev/null", *args
        )
        return int(out.strip().split(";")[0])

    def scancel(self, job_id: int) -> None:
        self._run("scancel", str(job_id))

    def job_state(self, job_id: int) -> str:
        out = self._run("squeue", "-h", "-j", str(job_id), "-o", "%T")
        return out.strip() or "GONE"

    def wait_state(self, job_id: int, states: set[str], timeout: float = 120) -> None:
        _wait(lambda: self.job_state(job_id) in states, timeout, f"job {job_id} in {states}")

    def stop_rest(self) -> None:
        if self.rest is not None and self.rest.poll() is None:
            self._terminate(self.rest)

    def start_rest(self) -> None:
        self.rest = self._spawn(
            ["env", f"SLURM_CONF={self.rest_conf_dir / 'slurm.conf'}", "SLURM_JWT=daemon",
             "slurmrestd", "-a", "rest_auth/jwt", "-s", "openapi/v0.0.38",
             f"127.0.0.1:{self.rest_port}"],
            "slurmrestd.out", user=REST_USER,
        )  # fmt: skip
        _wait(self._rest_answers, 60, f"slurmrestd on {self.rest_port}")

    # ---- stop --------------------------------------------------------------------------
    @staticmethod
    def _terminate(process: subprocess.Popen) -> None:
        if process.poll() is None:
            try:
                os.killpg(process.pid, 15)  # runuser/env and the daemon they started
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()

    def stop(self) -> None:
        try:
            self._run("scancel", "--full", "--user=root", timeout=15)
            time.sleep(1)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            pass
        for process in reversed(self.processes):
            self._terminate(process)
        self.processes.clear()
        if self.rest_conf_dir is not None:
            shutil.rmtree(self.rest_conf_dir, ignore_errors=True)
            self.rest_conf_dir = None
        if self.munged_pid is not None:
            try:
                os.kill(self.munged_pid, 15)
            except ProcessLookupError:
                pass
            self.munged_pid = None
        if self.munge_dir is not None:
            time.sleep(0.5)  # munged removes its socket on the way out
            shutil.rmtree(self.munge_dir, ignore_errors=True)
            self.munge_dir = None
