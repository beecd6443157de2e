"""Pausing and resuming a running job (issue 28, item 2) on real processes: a real owner, real jobs,
psutil watching their CPU time; the cgroup v2 freezer and the SIGSTOP walk both; a stand-in
``cuda-checkpoint`` on PATH that answers as NVIDIA's tool does and records each call with whether the
process was frozen at that moment.

Before: a running job could only be left alone or killed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs import freeze, reach
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("setsid") is None, reason="Linux, setsid"
)

PY = sys.executable
BASH = shutil.which("bash") or "/bin/bash"
STANDIN = Path(__file__).resolve().parent.parent.parent / "fixtures" / "standin_cuda_checkpoint"
BURN = "import sys, os; open(sys.argv[1], 'w').write(str(os.getpid()))\nwhile True: pass"


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def client(paths: Paths) -> Iterator[ipc.IpcClient]:
    with running_owner(paths), ipc.IpcClient(paths, timeout_s=60) as c:
        yield c


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def burning(pids: list[int]) -> bool:
    """Whether every one of ``pids`` gained CPU time over a moment."""
    before = [cpu_s(p) for p in pids]
    time.sleep(0.3)
    return all(cpu_s(p) > b for p, b in zip(pids, before, strict=True))


def idle(pids: list[int]) -> bool:
    """Whether none of ``pids`` gained CPU time over a moment (a frozen process gains none at all)."""
    before = [cpu_s(p) for p in pids]
    time.sleep(0.3)
    return all(cpu_s(p) == b for p, b in zip(pids, before, strict=True))


def pid_in(path: Path) -> int:
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), what=f"a pid in {path}"))


def _task(client: ipc.IpcClient, task_id: int) -> TaskView:
    return client.ask(rq.Get(id=task_id)).task


def _ended(client: ipc.IpcClient, task_id: int) -> TaskView:
    return wait_for(
        lambda: (t := _task(client, task_id)).state in ("succeeded", "failed", "cancelled") and t,
        what=f"task {task_id} to end",
    )


def _burners(client: ipc.IpcClient, tmp_path: Path, **overrides: object) -> tuple[int, list[int]]:
    """A job that burns CPU in itself, in a child, and in a double-forked ``setsid`` child (which
    leaves the job's tree and session at once); the task id and the burners' pids."""
    marks = [tmp_path / f"burner-{i}.pid" for i in range(3)]
    script = (
        f'{PY} -c "$BURN" {marks[0]} &\n'
        f'( setsid {PY} -c "$BURN" {marks[1]} & )\n'
        f'exec {PY} -c "$BURN" {marks[2]}\n'
    )
    task = client.ask(
        rq.Run(argv=[BASH, "-c", script], name="burner", overrides={"retries": 0, **overrides},
               caller_env={**os.environ, "BURN": BURN})
    ).tasks[0]  # fmt: skip
    return task.id, [pid_in(m) for m in marks]


def test_a_paused_job_stops_using_the_cpu_whole_and_resumes(
    client: ipc.IpcClient, paths: Paths, tmp_path: Path
) -> None:
    task_id, pids = _burners(client, tmp_path)
    try:
        assert wait_for(lambda: burning(pids), what="the burners to burn")
        paused = client.ask(rq.PauseJob(id=task_id)).task
        assert paused.state == "running" and paused.shown_state == "paused" and paused.paused_at is not None
        assert render(paused.reason).startswith("paused by you at ")
        assert idle(pids), "a process of the paused job still used the CPU (the setsid one included)"
        log_text = Path(paused.log_path or "").read_text()
        method = "its cgroup's freezer" if reach.own_cgroup() is not None else "SIGSTOP"
        assert f"gputray: {render(paused.reason)}: " in log_text and method in log_text
        with pytest.raises(ipc.RemoteError, match="paused already"):
            client.ask(rq.PauseJob(id=task_id))
        listed = subprocess.run(
            [PY, "-m", "gputray.gui.entry", "queue"], capture_output=True, text=True, timeout=60,
            env={**os.environ, "GPUTRAY_HOME": str(paths.data_dir.parent)},
        ).stdout  # fmt: skip
        assert any(line.split()[:2] == [str(task_id), "paused"] for line in listed.splitlines()), listed
        resumed = client.ask(rq.ResumeJob(id=task_id)).task
        assert resumed.shown_state == "running" and resumed.paused_at is None and resumed.paused_s > 0
        assert " ; " not in render(resumed.reason) and "; resumed " in render(resumed.reason)
        assert wait_for(lambda: burning(pids), what="the burners to burn again")
        with pytest.raises(ipc.RemoteError, match="not paused"):
            client.ask(rq.ResumeJob(id=task_id))
        said = subprocess.run(  # as typed: it says the job is paused, not its task's state "running"
            [PY, "-m", "gputray.gui.entry", "pause-job", str(task_id)], capture_output=True, text=True,
            timeout=60, env={**os.environ, "GPUTRAY_HOME": str(paths.data_dir.parent)},
        )  # fmt: skip
        assert said.returncode == 0, said.stderr
        out = said.stdout
        assert out.startswith(f"#{task_id} ") and ": paused (paused by you at " in out, out
        # a paused job can be cancelled: it is thawed to stop
        client.ask(rq.Cancel(ids=[task_id]))
        assert _ended(client, task_id).state == "cancelled"
        assert wait_for(lambda: not any(psutil.pid_exists(p) for p in pids), what="the burners to end")
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_paused_time_counts_neither_to_the_timeout_nor_to_the_runtime(
    client: ipc.IpcClient, paths: Paths, tmp_path: Path
) -> None:
    mark = tmp_path / "started"
    # a second of work in small steps (a pause stops the steps, not the clock of one sleep)
    work = f"import time; open({str(mark)!r}, 'w').close()\nfor _ in range(20): time.sleep(0.05)"
    task_id = (
        client.ask(rq.Run(argv=[PY, "-c", work], name="short", overrides={"retries": 0, "timeout_s": 2.5}))
        .tasks[0]
        .id
    )
    wait_for(mark.exists, what="the job to start")
    client.ask(rq.PauseJob(id=task_id))
    time.sleep(2.5)  # paused past its timeout: had it counted, the job would be stopped as timed out
    client.ask(rq.ResumeJob(id=task_id))
    done = _ended(client, task_id)
    assert done.state == "succeeded", render(done.reason)
    assert done.paused_s >= 2.5 and done.started_at is not None and done.ended_at is not None
    with contextlib.closing(sqlite3.connect(paths.queue_db)) as db:  # what the estimates learn
        learned = wait_for(lambda: db.execute("SELECT duration_s FROM job_runs").fetchone(), what="the run")
    assert learned[0] == pytest.approx(done.ended_at - done.started_at - done.paused_s)


def test_the_sigstop_walk_stops_every_process_and_the_cgroup_freezer_freezes_the_group(
    tmp_path: Path,
) -> None:
    """The two ways ``freeze`` works on Linux, each on a real tree: SIGSTOP where there is no group
    (a child in a session of its own included), the cgroup freezer where the job has one."""
    marks = [tmp_path / "a.pid", tmp_path / "b.pid"]
    script = f'{PY} -c "$BURN" {marks[0]} &\nsetsid {PY} -c "$BURN" {marks[1]} &\nwait\n'
    group = reach.JobCgroup.make(f"gputray-test-{os.getpid()}")

    def start(join: bool) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [BASH, "-c", script], env={**os.environ, "BURN": BURN}, start_new_session=True,
            preexec_fn=(lambda: None if group is None else group.join() and None) if join else None,
        )  # fmt: skip

    proc = start(join=False)
    try:
        pids = [pid_in(m) for m in marks]
        job = freeze.JobProcesses(proc.pid)
        frozen = freeze.freeze(job)
        assert frozen.method == "signals" and set(pids) <= set(frozen.pids)
        stopped = lambda: all(psutil.Process(p).status() == psutil.STATUS_STOPPED for p in pids)  # noqa: E731
        wait_for(stopped, what="SIGSTOP to be delivered")
        assert idle(pids)
        freeze.thaw(job, frozen.method)
        assert wait_for(lambda: burning(pids), what="the thawed tree to burn")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        for m in marks:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(m.read_text()), signal.SIGKILL)
            m.unlink(missing_ok=True)
        proc.wait()
    if group is None:
        pytest.skip("no writable cgroup v2 group here: the cgroup freezer path is not tested")
    proc = start(join=True)
    try:
        pids = [pid_in(m) for m in marks]
        job = freeze.JobProcesses(proc.pid, cgroup=str(group.path))
        frozen = freeze.freeze(job)
        assert frozen.method == "cgroup"
        assert "frozen 1" in (group.path / "cgroup.events").read_text().splitlines()
        assert idle(pids)
        freeze.thaw(job, frozen.method)
        assert "frozen 0" in (group.path / "cgroup.events").read_text().splitlines()
        assert wait_for(lambda: burning(pids), what="the thawed group to burn")
    finally:
        group.kill()
        proc.wait()
        wait_for(group.remove, what="the test's group to empty")


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    files = {name: tmp_path / f"cuda-{name}" for name in ("calls", "pids", "state")}
    files["pids"].write_text("")
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{os.environ['PATH']}")
    for name, path in files.items():
        monkeypatch.setenv(f"STANDIN_CUDA_{name.upper()}", str(path))
    return files


def _calls(standin: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """The stand-in's calls as (what, pid, frozen then), the CUDA process's only."""
    cuda = {int(x) for x in standin["pids"].read_text().split()}
    out = []
    for line in standin["calls"].read_text().splitlines():
        call = json.loads(line)
        argv = call["argv"]
        what = argv[argv.index("--action") + 1] if "--action" in argv else argv[0].lstrip("-")
        if call["pid"] in cuda:
            out.append((what, call["pid"], call["frozen"]))
    return out


def test_cuda_checkpoint_moves_the_memory_out_before_the_freeze_and_back_after_the_thaw(
    client: ipc.IpcClient, tmp_path: Path, standin: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """First the tool fails as it does on a process with UVM memory: the job is frozen all the same and
    keeps its memory, and the reason quotes the tool; then it works: lock and checkpoint before the
    freeze (the tool needs the process's own CUDA thread), restore and unlock after the thaw."""
    mark = tmp_path / "burner.pid"
    task_id = (
        client.ask(rq.Run(argv=[PY, "-c", BURN, str(mark)], name="cuda", overrides={"retries": 0}))
        .tasks[0]
        .id
    )
    cuda = pid_in(mark)
    standin["pids"].write_text(f"{cuda}\n")  # the job's process is a CUDA one
    try:
        monkeypatch.setenv("STANDIN_CUDA_FAIL", "checkpoint")
        held = client.ask(rq.PauseJob(id=task_id)).task
        assert held.shown_state == "paused" and render(held.reason).endswith(
            f"its GPU memory stays held (cuda-checkpoint: Could not checkpoint on process ID {cuda}: "
            '"operation not supported")'
        )
        assert idle([cuda])
        client.ask(rq.ResumeJob(id=task_id))
        assert [c[0] for c in _calls(standin)] == ["get-state", "lock", "checkpoint", "unlock"]
        assert json.loads(standin["state"].read_text()) == {str(cuda): "running"}
        assert wait_for(lambda: burning([cuda]), what="the job to burn again")

        monkeypatch.delenv("STANDIN_CUDA_FAIL")
        standin["calls"].write_text("")
        paused = client.ask(rq.PauseJob(id=task_id)).task
        assert "its GPU memory was moved to host memory (cuda-checkpoint)" in render(paused.reason)
        assert json.loads(standin["state"].read_text()) == {str(cuda): "checkpointed"}
        client.ask(rq.ResumeJob(id=task_id))
        assert _calls(standin) == [
            ("get-state", cuda, False),
            ("lock", cuda, False),  # while it runs
            ("checkpoint", cuda, False),
            ("restore", cuda, False),  # once it is thawed
            ("unlock", cuda, False),
        ]
        assert json.loads(standin["state"].read_text()) == {str(cuda): "running"}
        lock = next(json.loads(x)["argv"] for x in standin["calls"].read_text().splitlines() if "lock" in x)
        assert lock[-2:] == ["--timeout", "10000"]
    finally:
        client.ask(rq.Cancel(ids=[task_id]))
        with contextlib.suppress(OSError):
            os.kill(cuda, signal.SIGKILL)


def test_only_a_job_running_here_can_be_paused(client: ipc.IpcClient, tmp_path: Path) -> None:
    later = client.ask(
        rq.Run(argv=[PY, "-c", "pass"], name="later", overrides={"start_at": time.time() + 3600})
    ).tasks[0]
    with pytest.raises(ipc.RemoteError, match=rf"task #{later.id} is (queued|waiting): only a job running"):
        client.ask(rq.PauseJob(id=later.id))
    with pytest.raises(ipc.RemoteError, match="no task #999"):
        client.ask(rq.PauseJob(id=999))
