"""Start a throw-away `gputray daemon --demo` (GPUTRAY_HOME in a temp dir) for the benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths


class BenchDaemon:
    def __init__(
        self,
        scenario: Path | None = None,
        extra_env: dict[str, str] | None = None,
        prepare: Callable[[Paths], None] | None = None,
        xdg: bool = False,
        python: str = sys.executable,
    ) -> None:
        """``prepare(paths)`` runs before the daemon starts (a bench fills the queue file there).
        ``xdg``: no GPUTRAY_HOME, the XDG folders in the temp dir instead, so that each command finds
        its folders as a user's does (platformdirs, or what an earlier command remembered of it).
        ``python``: the interpreter whose gputray the daemon runs (another install's, say)."""
        self._tmp = tempfile.TemporaryDirectory(prefix="gputray-bench-")
        self.home = Path(self._tmp.name)
        if xdg:  # the folders come from platformdirs, as for a user without GPUTRAY_HOME
            (self.home / "xdg-run").mkdir(mode=0o700)
            folders = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state"}
            env = {k: v for k, v in os.environ.items() if k != "GPUTRAY_HOME" and not k.startswith("XDG_")}
            self.env = {**env, **{k: str(self.home / v) for k, v in folders.items()}}
            self.env |= {"XDG_RUNTIME_DIR": str(self.home / "xdg-run"), **(extra_env or {})}
            self.paths = Paths(*(self.home / d / "gputray" for d in ("config", "data", "state", "xdg-run")))
        else:
            self.env = {**os.environ, "GPUTRAY_HOME": str(self.home), **(extra_env or {})}
            self.paths = Paths(*(self.home / d for d in ("config", "data", "state", "run")))
        if prepare is not None:
            prepare(self.paths)
        cmd = [python, "-m", "gputray.gui.entry", "daemon", "--demo", "--log-level", "WARNING"]
        if scenario is not None:
            cmd += ["--demo-scenario", str(scenario)]
        self.stderr = open(self.home / "daemon-stderr.txt", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.monotonic() + 30
        while True:
            try:
                if ipc.ask(self.paths, rq.Ping()).ready:
                    break
            except ipc.IpcError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "the daemon did not start: " + (self.home / "daemon-stderr.txt").read_text()
                )
            time.sleep(0.05)

    def client(self) -> ipc.IpcClient:
        return ipc.IpcClient(self.paths, timeout_s=120)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gputray.gui.entry", *args], env=self.env, capture_output=True, text=True
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        self._tmp.cleanup()

    def __enter__(self) -> BenchDaemon:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
