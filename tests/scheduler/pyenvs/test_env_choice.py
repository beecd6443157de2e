"""A torch job finds its env with no manual step: the queue's own background checks (the doctor's probe
and cache), redirects between devices whose proven envs differ, stale results probed again, the demo's
simulated GPUs standing in for real ones on the CPU, and no job ever started without torch.

Real parts throughout: real venvs (the session's torch 2.13.0 CPU venv, and a second, cheap venv that
sees the same torch through a ``.pth`` file), real probes, real job processes, a real SQLite queue; the
simulated GPU pair on a fake clock.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import venv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI, SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.scenario import Load, Scenario
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs import doctor
from gputray.scheduler.pyenvs.choice import ProbingChooser, doctor_probe
from gputray.scheduler.pyenvs.doctor_cache import PairResult, cache_file, record_results
from gputray.scheduler.pyenvs.registry import PythonEnv, add_env
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.doctor_codes import RanUnder
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskPatch, TaskRecord

GIB = 1024**3
NV, AMD = RTX_5060_TI.key, RADEON_780M.key
JOB = """
import json, os, sys
import torch
names = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
         "HSA_OVERRIDE_GFX_VERSION", "GPUTRAY_DEVICE")
print("JOB " + json.dumps({"python": sys.executable, "torch": torch.__version__,
      "sum": float(torch.ones(3, 3).sum()), **{n: os.environ.get(n) for n in names}}), flush=True)
"""


def _venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@pytest.fixture(scope="session")
def second_torch_python(torch_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second CPU-torch env without installing torch twice: a venv with its own interpreter file
    (copies, so touching it leaves the first alone) that sees the first venv's site-packages."""
    folder = tmp_path_factory.mktemp("envs") / "standin"
    venv.EnvBuilder(with_pip=False, symlinks=False).create(folder)
    python = _venv_python(folder)
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    theirs = subprocess.run([str(torch_python), "-c", code], capture_output=True, text=True, check=True)
    mine = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    Path(mine.stdout.strip(), "first-torch-venv.pth").write_text(theirs.stdout.strip() + "\n")
    return python


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Queue:
    """A queue service over the simulated pair, with the owner's default env chooser."""

    def __init__(self, loads: tuple[Load, ...] = ()) -> None:
        self.clock = FakeClock()
        self.monitor = Monitor(
            [SimulatedBackend(Scenario(loads), clock=self.clock)], host=HostReader(), clock=self.clock
        )
        self.store = TaskStore(app_paths().queue_db)
        self.tick(0)
        self.q = QueueService(self.store, self.monitor, paths=app_paths())
        self.q.start()

    @property
    def chooser(self) -> ProbingChooser:
        assert isinstance(self.q.env_chooser, ProbingChooser)
        return self.q.env_chooser

    def tick(self, advance_s: float) -> None:
        self.clock.t += advance_s
        self.monitor.sample_once()

    def until(self, check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
        try:
            return wait_for(check, timeout_s)
        except AssertionError:
            raise AssertionError(f"timed out; queue: {[TaskView.of(r) for r in self.q.list()]}") from None

    def ended(self, rec: TaskRecord, timeout_s: float = 120.0) -> TaskRecord:
        return self.until(lambda: (r := self.q.get(rec.id)).finished and r, timeout_s)  # type: ignore[no-any-return]

    def log(self, rec: TaskRecord) -> str:
        path = self.q.get(rec.id).log_path
        return Path(path).read_text(encoding="utf-8") if path else ""

    def job(self, rec: TaskRecord) -> dict[str, Any]:
        line = next(ln for ln in self.log(rec).splitlines() if ln.startswith("JOB "))
        return dict(json.loads(line[4:]))

    def close(self) -> None:
        self.q.close(kill_running=True)
        self.store.close()


@pytest.fixture
def queues(gputray_home: Path) -> Iterator[Callable[..., Queue]]:
    made: list[Queue] = []

    def make(loads: tuple[Load, ...] = ()) -> Queue:
        made.append(Queue(loads))
        return made[-1]

    yield make
    for q in made:
        q.close()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(JOB, encoding="utf-8")
    return path


def _proven(env: PythonEnv, key: str, name: str, vendor: str) -> None:
    """A doctor result for ``env`` on ``key``, as the doctor's own code writes it (a CPU build cannot
    really run on a GPU: two CPU venvs stand in for a CUDA and a ROCm env)."""
    fp, _ = doctor.fingerprint(env)
    assert fp is not None
    pair = PairResult(
        env_name=env.name,
        python=str(env.python),
        device_key=key,
        device_name=name,
        vendor=vendor,
        verdict="works",
        finding=RanUnder(selection="a stand-in"),
        torch_version="2.13.0+cpu",
        extra_env=env.extra_env,
        probed_at_s=1.0,
    )
    record_results(cache_file(), fp, [pair], doctor.driver_versions(), bench=False)


@pytest.mark.slow
def test_a_redirect_runs_in_the_env_proven_on_the_other_device_and_back(
    queues: Callable[..., Queue], script: Path, torch_python: Path, second_torch_python: Path
) -> None:
    cuda = add_env(torch_python, name="cuda-standin")
    rocm = add_env(second_torch_python, name="rocm-standin", extra_env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    _proven(cuda, NV, RTX_5060_TI.name, "nvidia")
    _proven(rocm, AMD, RADEON_780M.name, "amd")
    loads = (
        Load("5060ti", 0, 50, 96, vram_bytes=14 * GIB, process="llama-server", pid=90001),
        Load("780m", 50, 1e9, 90, shared_bytes=6 * GIB, process="comfyui", pid=90002),
    )
    h = queues(loads)
    (away,) = h.q.submit_files(
        [script], overrides=TaskPatch(device_prefs=("5060ti", "780m"), on_busy="redirect")
    )
    done = h.ended(away)
    assert done.state == "succeeded", h.log(away)
    assert done.device == AMD and done.env == "rocm-standin"
    assert render(done.reason).startswith("redirected to Radeon 780M: GeForce RTX 5060 Ti busy (llama-server")
    ran = h.job(away)
    assert ran["python"] == str(second_torch_python) and ran["torch"].startswith("2.13.0")
    assert ran["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0" and ran["ROCR_VISIBLE_DEVICES"] == "0"
    assert ran["HIP_VISIBLE_DEVICES"] == "0" and ran["CUDA_VISIBLE_DEVICES"] is None

    h.tick(55)  # the LLM server has gone, ComfyUI holds the 780M
    h.tick(6)  # the 5060 Ti has been free for the free window
    (back,) = h.q.submit_files(
        [script], overrides=TaskPatch(device_prefs=("780m", "5060ti"), on_busy="redirect")
    )
    done = h.ended(back)
    assert done.state == "succeeded", h.log(back)
    assert done.device == NV and done.env == "cuda-standin"
    ran = h.job(back)
    assert ran["python"] == str(torch_python)
    assert ran["CUDA_VISIBLE_DEVICES"] == RTX_5060_TI.uuid and ran["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert ran["HSA_OVERRIDE_GFX_VERSION"] is None and ran["ROCR_VISIBLE_DEVICES"] is None
    assert h.chooser.checks == 0  # the cache decided: nothing was probed


@pytest.mark.slow
def test_a_stale_result_is_probed_again_before_the_job_runs(
    queues: Callable[..., Queue], script: Path, second_torch_python: Path
) -> None:
    env = add_env(second_torch_python, name="standin")
    _proven(env, "cpu", "CPU", "cpu")
    stamp = second_torch_python.stat()
    os.utime(second_torch_python, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))  # "upgraded"
    h = queues()
    (rec,) = h.q.submit_files([script], overrides=TaskPatch(device_prefs=("cpu",)))
    seen: set[str] = set()
    h.until(lambda: seen.add(render(h.q.get(rec.id).reason)) or h.q.get(rec.id).finished, timeout_s=120)
    done = h.q.get(rec.id)
    assert done.state == "succeeded" and done.env == "standin", h.log(rec)
    assert h.chooser.checks == 1
    assert "checking env standin on the CPU…" in seen or done.started_at is not None
    (pair,) = [p for p in doctor.cached_results() if p.env_name == "standin"]
    assert pair.device_key == "cpu" and pair.finding != RanUnder(selection="a stand-in")  # a real probe's row


@pytest.mark.slow
def test_the_first_torch_job_checks_the_env_in_the_background_then_runs_in_it(
    queues: Callable[..., Queue], script: Path, torch_python: Path, notorch_python: Path
) -> None:
    """No doctor run: the env without torch is tried and fails, the one with torch is found and used.
    The checks run in their own thread, never in the dispatcher or a caller's thread."""
    add_env(notorch_python, name="plain")
    add_env(torch_python, name="torch-cpu")
    h = queues()
    threads: list[str] = []
    original = h.chooser._probe

    def watched(env: PythonEnv, devices: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(env, devices)

    h.chooser._probe = watched
    (rec,) = h.q.submit_files([script], overrides=TaskPatch(device_prefs=("cpu",)))
    reasons: list[str] = []
    h.until(lambda: reasons.append(render(h.q.get(rec.id).reason)) or h.q.get(rec.id).finished, timeout_s=180)
    done = h.q.get(rec.id)
    assert done.state == "succeeded" and done.env == "torch-cpu", h.log(rec)
    assert h.job(rec)["python"] == str(torch_python) and h.job(rec)["CUDA_VISIBLE_DEVICES"] == ""
    assert threads == ["gputray-env-check", "gputray-env-check"]
    assert any(r.startswith("checking env ") and r.endswith(" on the CPU…") for r in reasons), reasons
    assert "gputray's own Python" not in h.log(rec) and render(done.reason) == ""
    # The doctor's cache now holds both results, as `gputray doctor` would show them.
    verdicts = {(p.env_name, p.device_key): p.verdict for p in doctor.cached_results()}
    assert verdicts[("plain", "cpu")] == "fails" and verdicts[("torch-cpu", "cpu")] == "works"


@pytest.mark.slow
def test_a_torch_job_never_runs_without_torch_it_waits_or_fails_by_its_policy(
    queues: Callable[..., Queue], script: Path, notorch_python: Path
) -> None:
    add_env(notorch_python, name="plain")
    h = queues()
    (waits,) = h.q.submit_files([script], overrides=TaskPatch(device_prefs=("cpu",)))
    (gives_up,) = h.q.submit_files(
        [script], overrides=TaskPatch(device_prefs=("cpu",), max_wait_s=2.0, after_max_wait="fail")
    )
    expected = (
        "no configured Python env works on the CPU: plain: torch is not installed in this env; "
        f"fix: {notorch_python} -m pip install torch"
    )
    h.until(lambda: render(h.q.get(waits.id).reason).startswith(expected), timeout_s=120)
    assert h.q.get(waits.id).state == "waiting" and h.q.get(waits.id).log_path is None
    failed = h.ended(gives_up)  # the dispatcher wakes for its max wait by itself
    assert failed.state == "failed" and failed.log_path is None
    assert re.match(r"gave up after waiting \d+ s: " + re.escape(expected), render(failed.reason))
    assert h.q.get(waits.id).state == "waiting"  # no max wait: it waits for an env that works


@pytest.mark.slow
def test_demo_a_torch_job_on_the_simulated_5060_ti_runs_on_the_cpu_and_says_so(
    queues: Callable[..., Queue], script: Path, torch_python: Path
) -> None:
    h = queues()
    (early,) = h.q.submit_files([script], overrides=TaskPatch(device_prefs=("5060ti",), on_busy="wait"))
    hint = (
        "demo: torch jobs run on the CPU in an env with torch; add one: "
        "gputray envs add PATH/TO/VENV (a venv where `pip install torch` ran)"
    )
    h.until(lambda: render(h.q.get(early.id).reason) == hint)
    add_env(torch_python, name="torch-cpu")  # nothing else: the next pass finds and checks it
    (rec,) = h.q.submit_files([script], overrides=TaskPatch(device_prefs=("5060ti",), on_busy="wait"))
    for task in (early, rec):
        done = h.ended(task)
        assert done.state == "succeeded", h.log(task)
        assert done.device == NV and done.env == "torch-cpu"
        assert render(done.reason, finished=True) == "demo: ran on the CPU in place of GeForce RTX 5060 Ti"
        ran = h.job(task)
        assert ran["CUDA_VISIBLE_DEVICES"] == "" and ran["HIP_VISIBLE_DEVICES"] == ""
        assert ran["GPUTRAY_DEVICE"] == NV and ran["sum"] == 9.0
        log = h.log(task)
        assert "demo: running on the CPU in place of GeForce RTX 5060 Ti" in log  # the header
        assert log.rstrip().endswith(
            "demo: ran on the CPU in place of GeForce RTX 5060 Ti (simulated GPUs cannot run kernels)"
        )
    assert h.chooser.checks == 1


def test_demo_with_no_env_anywhere_the_advice_is_said_once(
    queues: Callable[..., Queue], script: Path
) -> None:
    """The simulated GPUs and the CPU all lack an env: one reason that says how to add one, not the
    demo's line and the CPU's line each with the same advice."""
    h = queues()
    (rec,) = h.q.submit_files([script])
    hint = "gputray envs add PATH/TO/VENV (a venv where `pip install torch` ran)"
    h.until(lambda: render(h.q.get(rec.id).reason).endswith(hint))
    reason = render(h.q.get(rec.id).reason)
    assert reason == f"demo: torch jobs run on the CPU in an env with torch; add one: {hint}"
    assert reason.count("add one") == 1


def test_the_chooser_checks_an_env_once_and_says_which_it_checks(
    gputray_home: Path, notorch_python: Path
) -> None:
    """Many passes while a check runs: one check per env, and the reason names the env and device."""
    add_env(notorch_python, name="plain")
    release = threading.Event()
    calls: list[str] = []

    def slow(env: PythonEnv, devices: Any) -> Any:
        calls.append(env.name)
        release.wait(30)
        return doctor_probe(env, devices)

    changes = threading.Event()
    chooser = ProbingChooser(devices=lambda: [RTX_5060_TI], on_change=changes.set, probe=slow)
    try:
        from gputray.scheduler.pyenvs.choice import EnvChecking, EnvMissing

        first = chooser.status(RTX_5060_TI)
        assert isinstance(first, EnvChecking)
        assert (
            render(first.reason) == "checking env plain on the CPU (demo: in place of GeForce RTX 5060 Ti)…"
        )
        for _ in range(20):
            assert isinstance(chooser.status(RTX_5060_TI), EnvChecking)
        wait_for(lambda: calls, what="the check to start")
        release.set()
        assert changes.wait(60), "the queue is told when a check ends"
        last = chooser.status(RTX_5060_TI)
        assert isinstance(last, EnvMissing) and "torch is not installed in this env" in render(last.reason)
        assert calls == ["plain"]
    finally:
        release.set()
        chooser.close()


def test_with_no_env_configured_the_reason_says_how_to_add_one(gputray_home: Path) -> None:
    from gputray.scheduler.pyenvs.choice import EnvMissing
    from gputray.scheduler.queue.placement import CPU_INFO

    chooser = ProbingChooser(devices=lambda: [], on_change=lambda: None)
    status = chooser.status(CPU_INFO)
    assert isinstance(status, EnvMissing)
    assert render(status.reason) == (
        "no Python env is configured for torch jobs; add one: "
        "gputray envs add PATH/TO/VENV (a venv where `pip install torch` ran)"
    )
    assert not chooser.busy()  # nothing to check
