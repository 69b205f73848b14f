"""A Flower deployment on this machine: one SuperLink and one SuperNode per node folder, each a process of its own,
TLS and node authentication on, talking over 127.0.0.1 — Flower's real deployment engine, before several machines.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from fedrl_kit import deploy
from fedrl_kit.policy.hub import REPO_ROOT

CONNECTION = "fedrl-loopback"


def free_port() -> int:
    """A TCP port nothing on 127.0.0.1 listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, …), None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _table() -> dict[int, int]:
    """pid → parent pid of every process on this machine."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (st := _stat(d)) is not None:
            out[int(d)] = int(st[1])
    return out


def _identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time): a process's name that a later process reusing the pid does not share."""
    st = _stat(pid)
    return None if st is None else (pid, st[19])


def _descendants(roots, table=None) -> set[int]:
    table = _table() if table is None else table
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, ppid in table.items() if ppid in frontier and pid not in found}
        found |= frontier
    return found


class LoopbackDeployment:
    """SuperLink + SuperNodes as processes on 127.0.0.1; a context manager that stops them all (docs/flower.md).

    Args:
        root: a folder for the credentials, the processes' homes and logs.
        node_dirs: one node folder per SuperNode (``fedrl deploy split``), passed as its ``data-dir``.
        app_dir: the Flower app ``flwr run`` submits (default: this repository).
        env: extra environment for every process (e.g. ``FEDRL_AUDIT_ROOT``).
        connect_timeout: seconds to wait for the SuperLink's port and for each SuperNode to connect.
    """

    def __init__(self, root, node_dirs, app_dir=None, env: dict | None = None, connect_timeout: float = 120.0):
        self.root = Path(root).resolve()
        self.node_dirs = [str(Path(d).resolve()) for d in node_dirs]
        self.app_dir = str(Path(app_dir or REPO_ROOT).resolve())
        self.extra_env = dict(env or {})
        self.connect_timeout = connect_timeout
        self.procs: dict[str, subprocess.Popen] = {}
        self.seen: set[tuple[int, str]] = set()  # (pid, start time) of every process started here or by them
        self.port = self.node_ports = None

    # -- processes --------------------------------------------------------------------------------------------
    def _env(self, home: str) -> dict:
        bin_dir = str(Path(sys.executable).parent)
        (self.root / "homes" / home).mkdir(parents=True, exist_ok=True)
        return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
                "FLWR_HOME": str(self.root / "homes" / home), "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
                "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "PYTHONUNBUFFERED": "1",
                **self.extra_env}

    def _start(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.root / "logs" / f"{name}.log", "ab")
        p = subprocess.Popen(cmd, env=self._env(name), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs[name] = p
        self._track()
        return p

    def _track(self) -> None:
        pids = _descendants([p.pid for p in self.procs.values()]) | {p.pid for p in self.procs.values()}
        self.seen |= {ident for pid in pids if (ident := _identity(pid)) is not None}

    def _flwr(self, *args, timeout: float = 120.0) -> subprocess.CompletedProcess:
        r = subprocess.run([str(Path(sys.executable).parent / "flwr"), *args], env=self._env("cli"),
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"flwr {' '.join(args)} failed ({r.returncode}): {(r.stdout + r.stderr)[-600:]}")
        return r

    def log(self, name: str) -> str:
        path = self.root / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- start ------------------------------------------------------------------------------------------------
    def start(self) -> "LoopbackDeployment":
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        cred = self.root / "credentials"
        if not (cred / "ca.crt").exists():
            deploy.make_credentials(cred, len(self.node_dirs), ["127.0.0.1", "localhost"])
        self.port = free_port()
        self.node_ports = [free_port() for _ in self.node_dirs]
        (self.root / "homes" / "cli").mkdir(parents=True, exist_ok=True)
        (self.root / "homes" / "cli" / "config.toml").write_text(
            f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\naddress = "127.0.0.1:{self.port}"\n'
            f'root-certificates = "{cred / "ca.crt"}"\ninsecure = false\n')
        self._start("superlink", ["flower-superlink", "--ssl-ca-certfile", str(cred / "ca.crt"), "--ssl-certfile",
                                  str(cred / "server.crt"), "--ssl-keyfile", str(cred / "server.key"),
                                  "--enable-supernode-auth", "--disable-runtime-dependency-installation",
                                  "--host", "127.0.0.1", "--port", str(self.port)])
        self._wait_tls()
        for i in range(len(self.node_dirs)):
            self._flwr("supernode", "register", str(cred / f"node_{i}.pub"), CONNECTION)
            self.start_node(i)
        for i in range(len(self.node_dirs)):
            self.wait_node(i)
        return self

    def _wait_tls(self) -> None:
        ctx = ssl.create_default_context(cafile=str(self.root / "credentials" / "ca.crt"))
        deadline = time.time() + self.connect_timeout
        while time.time() < deadline:
            if self.procs["superlink"].poll() is not None:
                raise RuntimeError(f"the SuperLink exited ({self.procs['superlink'].returncode}):\n"
                                   f"{self.log('superlink')[-1500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    with ctx.wrap_socket(s, server_hostname="127.0.0.1"):
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the SuperLink did not serve TLS on 127.0.0.1:{self.port} within "
                           f"{self.connect_timeout:.0f} s:\n{self.log('superlink')[-1500:]}")

    def start_node(self, i: int) -> None:
        """Start (or restart) SuperNode ``i`` with its folder and its key."""
        cred = self.root / "credentials"
        self._start(f"supernode_{i}", ["flower-supernode", "--superlink", f"127.0.0.1:{self.port}",
                                       "--root-certificates", str(cred / "ca.crt"),
                                       "--auth-supernode-private-key", str(cred / f"node_{i}"),
                                       "--node-config", f"data-dir='{self.node_dirs[i]}'",
                                       "--host", "127.0.0.1", "--port", str(self.node_ports[i])])

    def wait_node(self, i: int, connections: int = 1) -> None:
        """Wait until SuperNode ``i`` has connected ``connections`` times (its log names its node id each time)."""
        deadline = time.time() + self.connect_timeout
        while len(re.findall(r"SuperNode ID: \d+", self.log(f"supernode_{i}"))) < connections:
            if self.procs[f"supernode_{i}"].poll() is not None:
                raise RuntimeError(f"SuperNode {i} exited:\n{self.log(f'supernode_{i}')[-1500:]}")
            if time.time() > deadline:
                raise RuntimeError(f"SuperNode {i} did not connect within {self.connect_timeout:.0f} s:\n"
                                   f"{self.log(f'supernode_{i}')[-1500:]}")
            time.sleep(0.2)
        self._track()

    def kill_node(self, i: int) -> None:
        """SIGKILL SuperNode ``i`` and whatever it runs (its executor, a ClientApp answering a message)."""
        p = self.procs[f"supernode_{i}"]
        kids = _descendants([p.pid])
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # -- runs -------------------------------------------------------------------------------------------------
    def run(self, run_config: dict, timeout: float = 900.0, on_line=None) -> dict:
        """``flwr run`` the app with ``run_config`` (keys of ``[tool.flwr.app.config]``) and wait for it to end."""
        overrides = " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else repr(v)}"
                             for k, v in run_config.items())
        cmd = [str(Path(sys.executable).parent / "flwr"), "run", self.app_dir, CONNECTION, "--stream",
               "--run-config", overrides]
        p = subprocess.Popen(cmd, env=self._env("cli"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        self.procs["flwr-run"] = p
        lines, deadline = [], time.time() + timeout
        for line in p.stdout:
            lines.append(line)
            self._track()
            if on_line is not None:
                on_line(line)
            if time.time() > deadline:
                os.killpg(p.pid, signal.SIGKILL)
                break
        p.wait()
        stream = "".join(lines)
        m = re.search(r"Successfully started run (\d+)", stream)
        if m is None:
            raise RuntimeError(f"flwr run did not start a run:\n{stream[-2000:]}")
        runs = json.loads(self._flwr("list", CONNECTION, "--format", "json").stdout)["runs"]
        mine = next(r for r in runs if r["run-id"] == m.group(1))
        return {"run_id": m.group(1), "status": mine["status"], "details": mine.get("status-details", ""),
                "stream": stream}

    # -- stop -------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the SuperNodes, then the SuperLink (SIGTERM to each group, SIGKILL after 20 s), then any process they
        started that is still alive."""
        self._track()
        order = sorted(self.procs, key=lambda n: (n == "superlink", n))
        for name in order:
            if self.procs[name].poll() is None:
                try:
                    os.killpg(self.procs[name].pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name in order:
            try:
                self.procs[name].wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.procs[name].pid, signal.SIGKILL)
                self.procs[name].wait()
        deadline = time.time() + 10
        while self.left_running() and time.time() < deadline:
            time.sleep(0.2)
        for pid in self.left_running():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def left_running(self) -> list[int]:
        """The processes this deployment started (or they started) that are still alive (zombies are not)."""
        return sorted(pid for pid, start in self.seen
                      if (st := _stat(pid)) is not None and st[19] == start and st[0] != "Z")

    def __enter__(self) -> "LoopbackDeployment":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
