"""The new user's first torch job, end to end with real processes and no `gputray doctor` run.

A fresh GPUTRAY_HOME, a real `gputray daemon` (this machine's real devices: the CPU at least), the CLI
in subprocesses, and the session's real torch 2.13.0 CPU venv added with `gputray envs add`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="stops the daemon with SIGTERM")

PY = sys.executable
TORCH_JOB = """
import os, sys
import torch
x = torch.randn(4, 4)
print("TORCH", torch.__version__, "SUM", float((x @ x.T).trace() >= 0), flush=True)
print("PY", sys.executable)
print("CUDA_VISIBLE_DEVICES=" + repr(os.environ.get("CUDA_VISIBLE_DEVICES")))
"""


class Home:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "GPUTRAY_HOME": str(root), "PYTHONUNBUFFERED": "1"}
        self.paths = Paths(root / "config", root / "data", root / "state", root / "run")
        self.daemon: subprocess.Popen[str] | None = None

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "gputray.gui.entry", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd or self.root,
        )

    def start_daemon(self, *extra: str) -> None:
        self.stderr = open(self.root / "daemon-stderr.txt", "w")  # noqa: SIM115
        self.daemon = subprocess.Popen(
            [PY, "-m", "gputray.gui.entry", "daemon", *extra],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            text=True,
            start_new_session=True,
        )
        wait_for(self._ready, 60.0, "the daemon to answer ping")

    def _ready(self) -> bool:
        assert self.daemon is not None
        if self.daemon.poll() is not None:
            raise AssertionError(f"the daemon exited: {(self.root / 'daemon-stderr.txt').read_text()}")
        try:
            return bool(ipc.ask(self.paths, rq.Ping()).ready)
        except ipc.IpcError:
            return False

    def task(self, task_id: int) -> TaskView:
        return ipc.ask(self.paths, rq.Get(id=task_id)).task  # type: ignore[no-any-return]

    def ended(self, task_id: int, timeout_s: float = 180.0) -> TaskView:
        return wait_for(  # type: ignore[no-any-return]
            lambda: (t := self.task(task_id)).state in ("succeeded", "failed", "cancelled") and t,
            timeout_s,
            f"task {task_id} to end",
        )

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(20)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait(5)
            self.stderr.close()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    h = Home(tmp_path / "fresh-home")
    h.root.mkdir()
    yield h
    h.stop()


@pytest.mark.slow
def test_a_new_users_first_torch_job_runs_in_the_env_they_added(
    home: Home, tmp_path: Path, torch_python: Path
) -> None:
    job = tmp_path / "torchjob.py"
    job.write_text(TORCH_JOB, encoding="utf-8")
    home.start_daemon()
    # Before any env: the task waits, and says how to add one in one line.
    early = home.cli("submit", str(job), "--device", "cpu", "--json", cwd=tmp_path)
    assert early.returncode == 0, early.stderr
    early_id = json.loads(early.stdout)[0]["id"]
    wait_for(
        lambda: (
            render(home.task(early_id).reason) == "no Python env is configured for torch jobs; add one: "
            "gputray envs add PATH/TO/VENV (a venv where `pip install torch` ran)"
        ),
        60,
        "the hint to add an env",
    )
    added = home.cli("envs", "add", str(torch_python), "--name", "cpu-torch")
    assert added.returncode == 0, added.stderr
    assert "torch 2.13.0" in added.stdout and "checking it on each device now" in added.stdout
    out = home.cli("submit", str(job), "--device", "cpu", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    task_id = json.loads(out.stdout)[0]["id"]
    for tid in (early_id, task_id):
        done = home.ended(tid)
        log = home.cli("logs", str(tid)).stdout
        assert done.state == "succeeded", log
        assert done.env == "cpu-torch" and done.device == "cpu" and done.kind == "torch"
        assert "TORCH 2.13.0" in log and "SUM 1.0" in log and f"PY {torch_python}" in log
        assert "CUDA_VISIBLE_DEVICES=''" in log
        assert "gputray's own Python" not in log and render(done.reason) == ""
    listing = home.cli("queue", "--all").stdout.splitlines()
    header = next(line for line in listing if line.startswith("ID "))  # after the "jobs:" line
    row = next(line for line in listing if line.startswith(str(task_id)))
    assert row[header.index("ENV") :].startswith("cpu-torch")
    as_json = json.loads(home.cli("queue", "--all", "--json").stdout)
    assert {t["env"] for t in as_json["tasks"]} == {"cpu-torch"}
    # The owner's check went into the doctor's cache: `gputray envs` shows it, with no doctor run.
    envs = home.cli("envs").stdout
    assert "torch 2.13.0" in envs and "✅ CPU" in envs


@pytest.mark.slow
def test_the_doctor_in_demo_mode_lists_the_simulated_pair_as_simulated(
    home: Home, torch_python: Path
) -> None:
    assert home.cli("envs", "add", str(torch_python), "--name", "torch-cpu").returncode == 0
    started = time.monotonic()
    out = home.cli("doctor", "--demo", "--no-bench")
    assert out.returncode == 0, out.stderr
    assert "Simulated GPUs (demo; they cannot run kernels):" in out.stdout
    for name in ("GeForce RTX 5060 Ti", "Radeon 780M"):
        assert f"  {name}: simulated — torch jobs placed here run on the CPU in torch-cpu" in out.stdout
    doc = json.loads(home.cli("doctor", "--demo", "--json").stdout)
    assert [(s["name"], s["simulated"], s["runs_on"], s["env"]) for s in doc["simulated"]] == [
        ("GeForce RTX 5060 Ti", True, "cpu", "torch-cpu"),
        ("Radeon 780M", True, "cpu", "torch-cpu"),
    ]
    assert all(p["device_name"] not in ("GeForce RTX 5060 Ti", "Radeon 780M") for p in doc["pairs"])
    print(f"\ndoctor --demo twice: {time.monotonic() - started:.1f} s")
