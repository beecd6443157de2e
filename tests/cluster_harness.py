"""A real Ray cluster on this machine and a real gputray owner per "machine", for the cluster tests and
``bench/cluster_dispatch.py``.

Ray nodes come from ``ray.cluster_utils.Cluster``: a head without CPUs (the "Ray head" of the docs)
and one node per machine carrying the custom resource ``gputray-machine-<name>``, all bound to
127.0.0.1, token authentication on (a fresh token in ``RAY_AUTH_TOKEN``), no dashboard, Ray's files
under a private temp folder (``RAY_TMPDIR``) so other Ray users of this machine never meet ours.
Each machine's owner is ``gputray daemon --demo`` with its own GPUTRAY_HOME, demo scenario and
``[cluster]`` table; it starts its own bridge.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomli_w
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cluster_records import ClusterStatus
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import R
from gputray.scheduler.replies import TaskView

PY = sys.executable

# Machine A ("desk"): its 5060 Ti held by an external llama-server, no 780M. B ("laptop"): only an
# idle 780M. (The simulated pair has both GPUs; `state = "gone"` takes one off the bus.)
SCENARIO_DESK = """
[[load]]
device = "5060ti"
util_percent = 95
vram_gib = 14
process = "llama-server"

[[load]]
device = "780m"
util_percent = 0
state = "gone"
"""
SCENARIO_LAPTOP = """
[[load]]
device = "5060ti"
util_percent = 0
state = "gone"
"""


def ray_available() -> str | None:
    """None when Ray can run here, else why not (for a skip with a clear reason)."""
    if sys.platform == "win32":
        return "Ray runs multi-node clusters on Linux only (Windows is single node)"
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (`pip install -e '.[test]'` brings it, as does 'gputray[cluster]')"
    return None


class RayCluster:
    """Ray nodes on 127.0.0.1: ``head`` and one per machine name."""

    def __init__(self, root: Path, machines: list[str], *, dashboard: bool = False) -> None:
        self.root = root
        self.dashboard = dashboard
        self.dashboard_port = 0
        self.token = secrets.token_hex(32)
        self.tmp = Path(tempfile.mkdtemp(prefix="gtr", dir="/tmp"))  # Ray's socket paths must stay short
        self.env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_TMPDIR": str(self.tmp),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # keep every address on loopback
        }
        self._saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)  # Ray's processes start from this process's environment
        from ray._raylet import AuthenticationTokenLoader, Config
        from ray.cluster_utils import Cluster

        Config.initialize("")  # Ray may be imported already: let it see token mode now
        AuthenticationTokenLoader.instance().reset_cache()
        self.cluster: Any = Cluster(initialize_head=True, head_node_args=self._head_args())
        self.port = int(self.cluster.address.rpartition(":")[2])
        self.nodes: dict[str, Any] = {}
        for m in machines:
            self.add_machine(m)

    def _head_args(self, port: int | None = None) -> dict[str, Any]:
        args: dict[str, Any] = {"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False}
        if self.dashboard:  # only the benchmark's anchor (`ray job submit`) needs it
            import socket

            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.dashboard_port = s.getsockname()[1]
            args.update(
                include_dashboard=True, dashboard_host="127.0.0.1", dashboard_port=self.dashboard_port
            )
            args["num_cpus"] = 1  # a Ray job's driver runs on the head
        if port is not None:
            args["gcs_server_port"] = port
        return args

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def add_machine(self, name: str) -> None:
        self.nodes[name] = self.cluster.add_node(
            num_cpus=2, resources={f"gputray-machine-{name}": 1}, node_ip_address="127.0.0.1"
        )

    def remove_machine(self, name: str) -> None:
        self.cluster.remove_node(self.nodes.pop(name), allow_graceful=False)

    def stop_head(self) -> None:
        self.cluster.remove_node(self.cluster.head_node, allow_graceful=False)

    def restart_head(self, machines: list[str]) -> None:
        """A new head on the same port, and the machines' nodes again (Ray without GCS fault tolerance
        has every node end with its head)."""
        for node in list(self.nodes.values()):
            with contextlib.suppress(Exception):
                self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.clear()
        self.cluster.add_node(**self._head_args(self.port))
        for m in machines:
            self.add_machine(m)

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.cluster.shutdown()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.tmp, ignore_errors=True)


class Machine:
    """One machine's gputray: ``gputray daemon --demo`` with its own home, scenario and [cluster]."""

    def __init__(
        self,
        root: Path,
        name: str,
        scenario: str,
        address: str,
        env: dict[str, str],
        shared: Path | None = None,
        torch_python: Path | None = None,
    ) -> None:
        self.name = name
        self.home = root / name
        self.home.mkdir(parents=True, exist_ok=True)
        self.paths = Paths(self.home / "config", self.home / "data", self.home / "state", self.home / "run")
        self.scenario = self.home / "scenario.toml"
        self.scenario.write_text(scenario, encoding="utf-8")
        self.paths.config_dir.mkdir(parents=True, exist_ok=True)
        cluster: dict[str, Any] = {
            "address": address,
            "machine": name,
            "lost_after": "12s",
            "fence_after": "3s",
        }
        if shared is not None:
            cluster["shared"] = [str(shared)]
        config: dict[str, Any] = {"cluster": cluster}
        if torch_python is not None:  # torch jobs (a dropped or submitted .py) need an env that has torch
            config["env"] = [{"name": "torchcpu", "python": str(torch_python)}]
        self.paths.config_file.write_text(tomli_w.dumps(config), encoding="utf-8")
        self.env = {**os.environ, **env, "GPUTRAY_HOME": str(self.home), "PYTHONUNBUFFERED": "1"}
        self.proc: subprocess.Popen[bytes] | None = None
        self.work = self.home / "work"
        self.work.mkdir(exist_ok=True)

    def start(self, timeout_s: float = 60.0) -> Machine:
        cmd = [PY, "-m", "gputray.gui.entry", "daemon", "--demo-scenario", str(self.scenario)]
        self._err = open(self.home / f"daemon-{time.monotonic_ns()}.err", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=self._err, start_new_session=True
        )
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{self.name}'s daemon did not start: {self.logs()}")
            time.sleep(0.1)
        return self

    def _ready(self) -> bool:
        try:
            return bool(ipc.ask(self.paths, rq.Ping()).ready)
        except ipc.IpcError:
            return False

    def ask(self, request: rq.Request[R]) -> R:
        with ipc.IpcClient(self.paths, timeout_s=30.0) as client:
            return client.ask(request)

    def cluster(self) -> ClusterStatus:
        doc = self.ask(rq.Status(cluster=True)).cluster
        assert doc is not None, "the owner has no cluster link"
        return doc

    def bridge_key(self) -> str:
        """The secret this owner started its bridge with (read from the bridge's environment, as
        another process of this user could): for a test that acts as the bridge would."""
        pid = self.cluster().bridge.pid
        assert pid is not None, "no bridge runs"
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return next(v.partition(b"=")[2].decode() for v in environ if v.startswith(b"GPUTRAY_BRIDGE_KEY="))

    def state(self) -> str | None:
        """The bridge's connection as its last report says (None before the first)."""
        report = self.cluster().report
        return None if report is None else report.state

    def sees(self, *machines: str) -> bool:
        report = self.cluster().report
        if report is None or report.state != "connected":
            return False
        alive = {m.name for m in report.machines if m.alive}
        return all(m in alive for m in machines)

    def task(self, task_id: int) -> TaskView:
        return self.ask(rq.Get(id=task_id)).task  # type: ignore[no-any-return]

    def cli(
        self, *args: str, cwd: Path | None = None, timeout_s: float = 60.0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``gputray ARGS`` as this machine's user types it; ``env``: more of the shell's environment."""
        return subprocess.run(
            [PY, "-m", "gputray.gui.entry", *args],
            env={**self.env, **(env or {})},
            cwd=cwd or self.work,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def logs(self) -> str:
        parts = []
        for pattern in ("daemon-*.err", "state/daemon.log", "state/bridge.log", "state/bridge-stderr.log"):
            for p in sorted(self.home.glob(pattern)):
                parts.append(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None
        with contextlib.suppress(Exception):
            self._err.close()


@contextlib.contextmanager
def machines_on(
    cluster: RayCluster,
    root: Path,
    shared: Path | None = None,
    torch_python: Path | None = None,
    **scenarios: str,
) -> Iterator[dict[str, Machine]]:
    """``torch_python``: a Python with torch, configured as every machine's env for torch jobs."""
    started: dict[str, Machine] = {}
    try:
        for name, scenario in scenarios.items():
            machine = Machine(root, name, scenario, cluster.address, cluster.env, shared, torch_python)
            started[name] = machine.start()
        yield started
    finally:
        for m in started.values():
            m.stop()


@contextlib.contextmanager
def desk_and_laptop(
    root: Path, shared: Path | None = None, torch_python: Path | None = None
) -> Iterator[tuple[RayCluster, Machine, Machine]]:
    """A Ray cluster of ``desk`` (its 5060 Ti held by llama-server) and ``laptop`` (an idle 780M),
    their owners started and seeing each other; the cluster is shut down on leaving."""
    cluster = RayCluster(root, ["desk", "laptop"])
    try:
        with machines_on(
            cluster, root, shared, torch_python, desk=SCENARIO_DESK, laptop=SCENARIO_LAPTOP
        ) as m:
            desk, laptop = m["desk"], m["laptop"]
            wait_for(
                lambda: desk.sees("laptop") and laptop.sees("desk"), 120, "both machines to see each other"
            )
            yield cluster, desk, laptop
    finally:
        cluster.shutdown()
