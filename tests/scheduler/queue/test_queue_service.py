"""The queue end to end in-process: real job processes, a real SQLite file, simulated GPUs on a fake clock."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import task_steps as steps
from waiting import wait_for

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI, SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.scenario import Load, Scenario
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.choice import ResolverChooser
from gputray.scheduler.pyenvs.registry import PythonEnv
from gputray.scheduler.queue.device_checks import SubmitRefused
from gputray.scheduler.queue.service import QueueService, TaskStateError
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import Paused, TaskView
from gputray.scheduler.tasks.recipes import ToolNotFound
from gputray.scheduler.tasks.records import QueueEvent, TaskPatch, TaskRecord, TaskSpec

GIB = 1024**3
NV, AMD = RTX_5060_TI.key, RADEON_780M.key
PY = sys.executable
SHOW_ENV = (
    "import os, json; print('ENV ' + json.dumps({k: os.environ.get(k) for k in ("
    "'CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER', 'HIP_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', "
    "'GPUTRAY_TASK_ID', 'GPUTRAY_DEVICE', 'GPUTRAY_QUEUE_FILE', 'HSA_OVERRIDE_GFX_VERSION')}), flush=True)"
)
HOSTILE = ["a'; touch pwned #.png", "with space.png", 'quo"te.png', "semi;colon.png", "日本語の画像.png"]


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Harness:
    def __init__(self, tmp_path: Path, loads: tuple[Load, ...] = (), **service_kw: Any) -> None:
        self.clock = FakeClock()
        self.sim = SimulatedBackend(Scenario(loads), clock=self.clock)
        self.monitor = Monitor([self.sim], host=HostReader(), clock=self.clock)
        self.paths = app_paths()
        self.store = TaskStore(self.paths.queue_db)
        self.events: list[QueueEvent] = []
        self.tmp_path = tmp_path
        self.service_kw = service_kw
        self.service: QueueService | None = None

    def start(self) -> QueueService:
        self.tick(0)
        self.service = QueueService(
            self.store, self.monitor, paths=self.paths, on_event=self.events.append, **self.service_kw
        )
        self.service.start()
        return self.service

    @property
    def q(self) -> QueueService:
        assert self.service is not None
        return self.service

    def tick(self, advance_s: float) -> None:
        self.clock.t += advance_s
        self.monitor.sample_once()

    def until(self, check: Callable[[], bool], timeout_s: float = 30.0) -> None:
        try:
            wait_for(check, timeout_s)
        except AssertionError:
            raise AssertionError(f"timed out; queue: {[TaskView.of(r) for r in self.q.list()]}") from None

    def state(self, task_id: int, *states: str) -> Callable[[], bool]:
        return lambda: self.q.get(task_id).state in states

    def job_env(self, rec: TaskRecord) -> dict[str, str | None]:
        rec = self.q.get(rec.id)
        assert rec.log_path is not None
        lines = [
            ln for ln in Path(rec.log_path).read_text(encoding="utf-8").splitlines() if ln.startswith("ENV ")
        ]
        return dict(json.loads(lines[-1][4:]))

    def log_text(self, task_id: int) -> str:
        path = self.q.get(task_id).log_path
        try:
            return Path(path).read_text(encoding="utf-8") if path else ""
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        if self.service is not None:
            self.service.close(kill_running=True)
        self.store.close()


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Harness]]:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    made: list[Harness] = []

    def make(loads: tuple[Load, ...] = (), **kw: Any) -> Harness:
        h = Harness(tmp_path, loads, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def command(name: str, code: str = SHOW_ENV, **kw: Any) -> TaskSpec:
    return TaskSpec(kind="command", name=name, argv=(PY, "-c", code), **kw)


LLAMA_FOREVER = (Load("5060ti", 0, 1e9, 96, vram_bytes=14 * GIB, process="llama-server", pid=90001),)


def test_wait_redirect_and_cpu_with_the_environment_each_job_gets(harness: Callable[..., Harness]) -> None:
    h = harness(LLAMA_FOREVER)
    q = h.start()
    waits = q.submit(command("waits", device_prefs=("5060ti",), on_busy="wait"))
    moves = q.submit(command("moves", device_prefs=("5060ti", "780m"), on_busy="redirect"))
    cpu = q.submit(command("cpu", device_prefs=("5060ti",), on_busy="cpu"))
    h.until(h.state(moves.id, "succeeded"))
    h.until(h.state(cpu.id, "succeeded"))
    h.until(lambda: q.get(waits.id).state == "waiting")

    w = q.get(waits.id)
    assert re.fullmatch(
        r"waiting for GeForce RTX 5060 Ti: llama-server holds 14\.0 GiB and the GPU is at \d+ %, "
        r"busy above 30 %",
        render(w.reason),
    )
    m = q.get(moves.id)
    assert m.device == AMD and m.exit_code == 0 and m.attempts == 1
    assert render(m.reason).startswith("redirected to Radeon 780M: GeForce RTX 5060 Ti busy (llama-server")
    assert h.job_env(m) == {
        "CUDA_VISIBLE_DEVICES": None,
        "CUDA_DEVICE_ORDER": None,
        "HIP_VISIBLE_DEVICES": "0",
        "ROCR_VISIBLE_DEVICES": "0",
        "GPUTRAY_TASK_ID": str(m.id),
        "GPUTRAY_DEVICE": AMD,
        "GPUTRAY_QUEUE_FILE": str(h.store.path),  # how crash recovery finds a job whose pid went unsaved
        "HSA_OVERRIDE_GFX_VERSION": None,
    }
    c = q.get(cpu.id)
    assert c.device == "cpu" and render(c.reason).startswith("on CPU: GeForce RTX 5060 Ti busy")
    env = h.job_env(c)
    assert (
        env["CUDA_VISIBLE_DEVICES"] == ""
        and env["HIP_VISIBLE_DEVICES"] == ""
        and env["GPUTRAY_DEVICE"] == "cpu"
    )
    for wanted in (("redirected", moves.id), ("waiting", waits.id), ("finished", cpu.id)):
        h.until(
            lambda w=wanted: w in [(e.kind, e.task.id) for e in h.events]
        )  # events come from their thread


def test_a_waiting_job_starts_when_the_external_load_ends(harness: Callable[..., Harness]) -> None:
    h = harness((Load("5060ti", 0, 20, 96, vram_bytes=int(14.2 * GIB), process="llama-server", pid=90001),))
    q = h.start()
    rec = q.submit(command("after-llm", device_prefs=("5060ti",)))
    for step in (5, 6):  # 11 s of sustained external use: busy by utilisation now
        h.tick(step)
    q.dispatch()
    assert re.fullmatch(
        r"waiting for GeForce RTX 5060 Ti: llama-server uses 14\.2 GiB; above 30 % for 10 s; now \d+ %",
        render(q.get(rec.id).reason),
    )
    h.tick(14)  # t = 25: the LLM server has gone, the free window starts
    h.tick(6)  # t = 31: free for 6 s
    h.until(h.state(rec.id, "succeeded"))
    done = q.get(rec.id)
    assert done.device == NV
    env = h.job_env(done)
    assert env["CUDA_VISIBLE_DEVICES"] == RTX_5060_TI.uuid and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["ROCR_VISIBLE_DEVICES"] is None and env["HIP_VISIBLE_DEVICES"] is None


ONLY_ON_AMD = (
    "import os, time, sys; print('attempt on', os.environ['GPUTRAY_DEVICE'], flush=True); "
    f"time.sleep(60) if os.environ['GPUTRAY_DEVICE'] == {NV!r} else sys.exit(0)"
)


@pytest.mark.parametrize(("retries", "how"), [(1, "lost"), (0, "lost"), (1, "gone"), (0, "gone")])
def test_a_device_lost_mid_job_interrupts_it_and_the_policy_decides(
    harness: Callable[..., Harness], retries: int, how: str
) -> None:
    h = harness((Load("5060ti", 10, 1e9, 0, state=how),))
    q = h.start()
    rec = q.submit(
        command(
            "egpu",
            ONLY_ON_AMD,
            device_prefs=("5060ti", "780m"),
            on_busy="redirect",
            retries=retries,
            backoff_s=0,
        )
    )
    h.until(lambda: f"attempt on {NV}" in h.log_text(rec.id))
    assert q.get(rec.id).device == NV and q.get(rec.id).state == "running"
    h.tick(11)  # the eGPU falls off the bus
    if how == "gone":  # it vanished from the bus: one missing snapshot could be a hiccup, three are not
        assert q.get(rec.id).state == "running"
        h.tick(1)
        assert q.get(rec.id).state == "running"
        h.tick(1)
    if retries:
        h.until(h.state(rec.id, "succeeded"))
        done = q.get(rec.id)
        assert done.device == AMD and done.attempts == 2
        expected = (
            "redirected to Radeon 780M: GeForce RTX 5060 Ti busy (lost: fell off the bus)"
            if how == "lost"
            else "redirected to Radeon 780M: 5060ti not present"
        )
        assert render(done.reason) == expected
        if how == "lost":  # the simulated backend's own reason is a code: Japanese all through
            assert render(done.reason, "ja") == (
                "Radeon 780M に振り替え: GeForce RTX 5060 Ti は使用中（失われました: バスから外れました）"
            )
        log = Path(done.log_path or "").read_text()
        assert f"attempt on {NV}" in log and f"attempt on {AMD}" in log  # one log, both attempts
    else:
        h.until(h.state(rec.id, "failed"))
        assert render(q.get(rec.id).reason) == "interrupted: GeForce RTX 5060 Ti was lost while it ran"
    h.until(lambda: any(e.kind == "interrupted" and e.task.id == rec.id for e in h.events))


def test_cancel_a_running_and_a_queued_task(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    long = q.submit(
        command("long", "import time; print('go', flush=True); time.sleep(60)", device_prefs=("780m",))
    )
    behind = q.submit(command("behind", device_prefs=("780m",)))
    h.until(lambda: q.get(long.id).pid is not None)
    h.until(h.state(behind.id, "waiting"))
    h.tick(1)  # demo mode: the simulated 780M now shows our job's load
    snap = h.monitor.latest
    assert snap is not None
    long_pid = q.get(long.id).pid
    assert long_pid is not None
    os_name = psutil.Process(long_pid).name()  # listed by the name the OS gives it, as real backends do
    assert any(p.pid == long_pid and p.device == AMD and p.name == os_name for p in snap.processes)
    assert render(q.get(behind.id).reason) == f"waiting for Radeon 780M: running 'long (#{long.id})'"
    cancelled = q.cancel(behind.id)
    assert cancelled.state == "cancelled"
    stopped = q.cancel(long.id)
    assert stopped.state == "cancelled" and render(stopped.reason) == "cancelled while running"
    assert q.cancel(long.id).state == "cancelled"  # idempotent
    with pytest.raises(TaskNotFound, match="no task #999"):
        q.cancel(999)


IGNORES_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(60)"
)


def test_a_cancel_while_a_timeout_kill_is_under_way_still_cancels(harness: Callable[..., Harness]) -> None:
    """The timeout kill waits out its grace time (the job ignores SIGTERM); the person's cancel meanwhile
    must win, or the retry policy would start the job again."""
    h = harness()
    q = h.start()
    rec = q.submit(
        command("stubborn", IGNORES_SIGTERM, device_prefs=("cpu",), timeout_s=1, retries=1, backoff_s=0)
    )
    h.until(lambda: "up" in h.log_text(rec.id))
    h.until(lambda: (job := q.running_job(rec.id)) is not None and job.kill_reason == "timeout")
    stopped = q.cancel(rec.id)
    assert (stopped.state, render(stopped.reason), stopped.attempts) == (
        "cancelled",
        "cancelled while running",
        1,
    )


def test_a_job_that_exited_is_not_relabelled_by_a_late_lost_device(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """The job exits 0 while a dispatch pass holds the queue (its exit is recorded after the pass); the
    device is then reported lost. It finished: it must end succeeded, not be requeued as interrupted."""
    h = harness((Load("5060ti", 10, 1e9, 0, state="lost"),))
    q = h.start()
    go = tmp_path / "go"
    wait_then_exit = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)"
    rec = q.submit(command("quick", wait_then_exit, device_prefs=("5060ti",), retries=1, backoff_s=0))
    h.until(lambda: q.get(rec.id).pid is not None)
    job = q.running_job(rec.id)
    assert job is not None
    with q._lock:  # stands for a long dispatch pass
        go.touch()
        wait_for(job.exited, what="the job to exit")
        h.tick(11)  # the 5060 Ti is reported lost: the monitor tick asks the job to stop
        assert job.kill_reason is None
    h.until(h.state(rec.id, "succeeded"))
    done = q.get(rec.id)
    assert (done.attempts, done.exit_code) == (1, 0)


def test_one_missing_snapshot_after_an_earlier_hiccup_does_not_kill_the_next_job(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """The 5060 Ti misses two snapshots (a hiccup, below the three that mean gone) while job A runs,
    then comes back. Later job B sees one missing snapshot: the old count must not add up to "gone"."""
    h = harness((Load("5060ti", 10, 12, 0, state="gone"), Load("5060ti", 20, 21, 0, state="gone")))
    q = h.start()
    go = tmp_path / "go"
    a = q.submit(
        command(
            "A",
            f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)",
            device_prefs=("5060ti",),
        )
    )
    h.until(h.state(a.id, "running"))
    h.tick(10)
    h.tick(1)  # two snapshots without the 5060 Ti
    go.touch()
    h.until(h.state(a.id, "succeeded"))
    h.tick(1)  # back
    b = q.submit(command("B", "import time; time.sleep(60)", device_prefs=("5060ti",)))
    h.until(h.state(b.id, "running"))
    h.tick(8)  # one snapshot without it
    job = q.running_job(b.id)
    assert job is not None and job.kill_reason is None
    h.tick(1)  # back again
    assert q.get(b.id).state == "running", render(q.get(b.id).reason)


def test_retry_move_pause_and_resume(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    q.pause()
    a, b, c = (q.submit(command(n, device_prefs=("780m",))) for n in "abc")
    h.until(lambda: render(q.get(c.id).reason) == "the queue is paused")
    assert [r.id for r in q.list()] == [a.id, b.id, c.id]
    q.edits.move(c.id, -2)
    assert [r.id for r in q.list()] == [c.id, a.id, b.id]
    q.edits.move(c.id, +1)
    assert [r.id for r in q.list()] == [a.id, c.id, b.id]
    q.pause("780m")
    assert q.paused() == Paused(all=True, devices=frozenset({AMD}))
    q.resume()  # everything
    assert q.paused() == Paused()
    for r in (a, b, c):
        h.until(h.state(r.id, "succeeded"))
    starts = sorted((q.get(r.id).started_at or 0, r.id) for r in (a, b, c))
    assert [i for _, i in starts] == [a.id, c.id, b.id]
    with pytest.raises(TaskStateError, match="only queued or waiting tasks move"):
        q.edits.move(a.id, 1)
    again = q.retry(a.id)
    assert again.state == "queued" and again.attempts == 1  # attempts count on: the next is attempt 2
    h.until(h.state(a.id, "succeeded"))
    assert q.get(a.id).attempts == 2
    assert "attempt 2," in Path(q.get(a.id).log_path or "").read_text()
    with pytest.raises(Exception, match="'4090' matches no device"):
        q.pause("4090")


def test_failures_follow_the_retry_policy(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    flaky = q.submit(
        command(
            "flaky", "import sys; print('try'); sys.exit(2)", device_prefs=("cpu",), retries=1, backoff_s=0
        )
    )
    slow = q.submit(command("slow", "import time; time.sleep(60)", device_prefs=("780m",), timeout_s=0.5))
    h.until(h.state(flaky.id, "failed"))
    f = q.get(flaky.id)
    assert f.attempts == 2 and f.exit_code == 2
    assert render(f.reason) == "exited with status 2; no retries left"
    assert Path(f.log_path or "").read_text().splitlines().count("try") == 2
    h.until(h.state(slow.id, "failed"))
    assert render(q.get(slow.id).reason) == "timed out after 0.5 s"


def fake_upscaler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A realesrgan-ncnn-vulkan on PATH that writes the argv it received into its output file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "realesrgan-ncnn-vulkan"
    tool.write_text(
        f"#!{PY}\nimport json, sys, time\nout = sys.argv[sys.argv.index('-o') + 1]\ntime.sleep(0.3)\n"
        "open(out, 'w', encoding='utf-8').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_hostile_file_names_reach_the_tool_as_data(
    harness: Callable[..., Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_upscaler(tmp_path, monkeypatch)
    pics = tmp_path / "pics"
    pics.mkdir()
    files = []
    for name in HOSTILE:
        (pics / name).write_bytes(b"img")
        files.append(pics / name)
    h = harness()
    q = h.start()
    records = q.submit_files(files)
    for rec in records:
        h.until(h.state(rec.id, "succeeded"))
    for f, rec in zip(files, records, strict=True):
        out = pics / f"{f.stem}_x4.png"
        argv = json.loads(out.read_text(encoding="utf-8"))
        device = q.get(rec.id).device
        assert argv == [
            "-i",
            str(f.resolve()),
            "-o",
            str(out.resolve()),
            "-s",
            "4",
            "-g",
            "0" if device == NV else "1",
        ]
    assert not list(tmp_path.rglob("pwned*"))
    assert not (Path.cwd() / "pwned").exists()


def test_results_are_never_overwritten(
    harness: Callable[..., Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a.png and a.jpg both make a_x4.png, at the same time on the two GPUs, and an a_x4.png from an
    earlier run is there already: three different files come out, the old one untouched."""
    fake_upscaler(tmp_path, monkeypatch)
    pics = tmp_path / "pics"
    pics.mkdir()
    (pics / "a_x4.png").write_text("an earlier result")
    files = [pics / "a.png", pics / "a.jpg"]
    for f in files:
        f.write_bytes(b"img")
    q = harness().start()
    records = q.submit_files(files)
    for rec in records:
        wait_for(lambda r=rec: q.get(r.id).state == "succeeded", what=f"task #{rec.id} to finish")
    assert sorted(p.name for p in pics.glob("a_x4*")) == ["a_x4 (2).png", "a_x4 (3).png", "a_x4.png"]
    assert (pics / "a_x4.png").read_text() == "an earlier result"
    inputs = {json.loads((pics / name).read_text())[1] for name in ("a_x4 (2).png", "a_x4 (3).png")}
    assert inputs == {str(f.resolve()) for f in files}  # each job wrote its own file
    assert "a_x4.png is taken, writing a_x4 (" in Path(q.get(records[0].id).log_path or "").read_text()


def fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> None:
    """``name`` on PATH: a Python script; ``out`` is its output path (after -o, else its last argument),
    written as the real tools do: an ``open`` that follows a link (``ffmpeg -y``, Real-ESRGAN)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(
        f"#!{PY}\nimport sys\nargs = sys.argv[1:]\n"
        "out = args[args.index('-o') + 1] if '-o' in args else args[-1]\n" + body,
        encoding="utf-8",
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("tool", "name", "result"),
    [("realesrgan-ncnn-vulkan", "a.png", "a_x4"), ("ffmpeg", "a.mp4", "a_x2")],
)
def test_a_link_at_the_output_path_is_never_written_through(
    harness: Callable[..., Harness],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    name: str,
    result: str,
) -> None:
    """A link that points nowhere passed for a free name (Path.exists()), and the tool (ffmpeg -y)
    wrote through it to wherever it pointed."""
    fake_tool(tmp_path, monkeypatch, tool, "open(out, 'w').write('the result')\n")
    pics, elsewhere = tmp_path / "pics", tmp_path / "elsewhere"
    pics.mkdir()
    elsewhere.mkdir()
    (pics / name).write_bytes(b"input")
    suffix = ".png" if tool.startswith("real") else ".mkv"
    planted = pics / f"{result}{suffix}"
    planted.symlink_to(elsewhere / "target")
    q = harness().start()
    rec = q.submit_files([pics / name])[0]
    wait_for(lambda: q.get(rec.id).state == "succeeded", what="the job to succeed")
    assert not (elsewhere / "target").exists()  # nothing written through the link
    assert planted.is_symlink() and os.readlink(planted) == str(elsewhere / "target")
    assert (pics / f"{result} (2){suffix}").read_text() == "the result"
    assert (
        f"{result}{suffix} is taken, writing {result} (2){suffix}"
        in Path(q.get(rec.id).log_path or "").read_text()
    )


def test_a_job_that_writes_no_result_leaves_no_empty_file(
    harness: Callable[..., Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output file is created (exclusively) before the tool starts; a tool that fails takes it back."""
    fake_tool(
        tmp_path,
        monkeypatch,
        "realesrgan-ncnn-vulkan",
        "import os; assert os.path.getsize(out) == 0\nsys.exit(3)\n",
    )
    pics = tmp_path / "pics"
    pics.mkdir()
    (pics / "a.png").write_bytes(b"input")
    q = harness().start()
    rec = q.submit_files([pics / "a.png"])[0]
    wait_for(lambda: q.get(rec.id).state == "failed", what="the job to fail")
    assert q.get(rec.id).exit_code == 3
    assert sorted(p.name for p in pics.iterdir()) == ["a.png"]


def test_a_missing_tool_is_refused_at_submit_and_nothing_is_queued(
    harness: Callable[..., Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    h = harness()
    q = h.start()
    with pytest.raises(ToolNotFound, match="'llama-bench' is not installed"):
        q.submit_files([model])
    assert q.list() == []


def test_torch_scripts_use_the_env_for_the_device_and_never_gputrays_own_python(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    script = tmp_path / "my script.py"
    script.write_text(SHOW_ENV + "\n", encoding="utf-8")
    seen: list[tuple[str, tuple[str, ...]]] = []

    def resolver(key: str, needs: Any) -> PythonEnv | None:
        seen.append((key, tuple(needs)))
        if key == AMD:
            return PythonEnv("rocm", Path(PY), {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
        return None

    h = harness(env_chooser=ResolverChooser(resolver))
    q = h.start()
    (on_amd,) = q.submit_files([script], overrides=TaskPatch(device_prefs=("780m",)))
    (cpu_only,) = q.submit_files([script], overrides=TaskPatch(device_prefs=("cpu",), on_busy="wait"))
    (moved,) = q.submit_files(
        [script], overrides=TaskPatch(device_prefs=("cpu",), on_busy="redirect", needs=("fp16",))
    )
    h.until(h.state(on_amd.id, "succeeded"))
    h.until(h.state(moved.id, "succeeded"))
    amd = q.get(on_amd.id)
    assert amd.env == "rocm" and h.job_env(amd)["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    assert "gputray's own Python" not in render(amd.reason)
    # No env on the CPU: the CPU-only task waits (never runs without torch) ...
    h.until(lambda: render(q.get(cpu_only.id).reason) == "no Python env is known to work on the CPU")
    assert q.get(cpu_only.id).state == "waiting" and q.get(cpu_only.id).log_path is None
    # ... and the redirecting one goes where an env works.
    done = q.get(moved.id)
    assert done.env == "rocm" and done.device == AMD
    assert render(done.reason) == (
        "redirected to Radeon 780M: CPU cannot run it (no Python env is known to work on the CPU)"
    )
    assert ("cpu", ()) in seen and (AMD, ("fp16",)) in seen


def test_a_named_device_alone_pins_a_torch_task_that_the_recipe_would_redirect(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """Issue 33 item 3: `gputray submit x.py --device 5060ti` waits for the 5060 Ti that llama-server
    holds; the torch recipe's `on_busy = "redirect"` goes with the recipe's own devices. Saying
    `--on-busy redirect` too is what lets it go to the 780M. The CLI's help says the same rule."""
    from gputray.scheduler import cli
    from gputray.scheduler.cli.commands.submit import patch_from_args

    script = tmp_path / "train.py"
    script.write_text(SHOW_ENV + "\n", encoding="utf-8")
    h = harness(LLAMA_FOREVER, env_chooser=ResolverChooser(lambda key, needs: PythonEnv("any", Path(PY))))
    q = h.start()
    parser = cli.build_parser(only="submit")
    pinned_args = parser.parse_args(["submit", str(script), "--device", "5060ti"])
    (pinned,) = q.submit_files([script], overrides=patch_from_args(pinned_args))
    assert pinned.spec.on_busy == "wait" and pinned.spec.device_prefs == ("5060ti",)
    free_args = parser.parse_args(["submit", str(script), "--device", "5060ti", "--on-busy", "redirect"])
    (let_go,) = q.submit_files([script], overrides=patch_from_args(free_args))
    h.until(h.state(let_go.id, "succeeded"))
    assert q.get(let_go.id).device == AMD
    h.until(
        lambda: render(q.get(pinned.id).reason).startswith("waiting for GeForce RTX 5060 Ti: llama-server")
    )
    assert q.get(pinned.id).state == "waiting" and q.get(pinned.id).device is None
    # the recipe's own choice (no --device) still redirects, as the recipe says
    (recipe_default,) = q.submit_files([script])
    h.until(h.state(recipe_default.id, "succeeded"))
    assert q.get(recipe_default.id).device == AMD
    help_text = " ".join(parser.format_help().split())
    sub_help = " ".join(cli._subparsers(parser)["submit"].format_help().split())
    assert "--device 5060ti alone pins it" in sub_help, help_text


def test_a_torch_job_finds_its_own_envs_python_and_pip_first_on_path(
    harness: Callable[..., Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Submitted from a shell with another venv active: inside the job, `python` is the env's."""
    import subprocess

    rocm_venv = tmp_path / "rocm venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(rocm_venv)], check=True, timeout=120)
    venv_python = next(
        p for p in (rocm_venv / "bin" / "python", rocm_venv / "Scripts" / "python.exe") if p.exists()
    )
    script = tmp_path / "which.py"
    script.write_text(
        "import json, os, shutil\n"
        "print('WHICH ' + json.dumps([shutil.which('python'), os.environ.get('VIRTUAL_ENV')]), flush=True)\n"
    )
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "the callers venv"))
    h = harness(env_chooser=ResolverChooser(lambda key, needs: PythonEnv("rocm", venv_python, {})))
    q = h.start()
    (rec,) = q.submit_files([script], overrides=TaskPatch(device_prefs=("780m",)))
    h.until(h.state(rec.id, "succeeded"))
    line = next(ln for ln in h.log_text(rec.id).splitlines() if ln.startswith("WHICH "))
    which, virtual_env = json.loads(line[6:])
    assert Path(which).parent == venv_python.parent and virtual_env == str(rocm_venv)


def test_start_recovers_what_a_crash_left_running(harness: Callable[..., Harness]) -> None:
    h = harness()
    rec = h.store.add(command("survivor", device_prefs=("cpu",), retries=1, backoff_s=0))
    steps.start(h.store, rec.id)
    q = h.start()
    h.until(h.state(rec.id, "succeeded"))
    assert q.get(rec.id).attempts == 2
    h.until(lambda: any(e.kind == "interrupted" and e.task.id == rec.id for e in h.events))


@pytest.mark.slow
def test_a_real_torch_job_on_the_cpu(
    harness: Callable[..., Harness], tmp_path: Path, torch_python: Path
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import torch\nx = torch.arange(6.0).reshape(2, 3)\n"
        "print('result', (x @ x.T).sum().item(), torch.cuda.is_available(), flush=True)\n",
        encoding="utf-8",
    )
    h = harness(
        env_chooser=ResolverChooser(
            lambda key, needs: PythonEnv("torch-cpu", torch_python) if key == "cpu" else None
        )
    )
    q = h.start()
    (rec,) = q.submit_files([script], overrides=TaskPatch(device_prefs=("cpu",)))
    h.until(h.state(rec.id, "succeeded", "failed"), timeout_s=120)
    done = q.get(rec.id)
    log = Path(done.log_path or "").read_text()
    assert done.state == "succeeded", log
    assert done.env == "torch-cpu" and "result 83.0 False" in log


def test_time_gates_and_max_wait_wake_the_dispatcher_without_ticks(harness: Callable[..., Harness]) -> None:
    h = harness(LLAMA_FOREVER)
    q = h.start()
    later = q.submit(command("later", device_prefs=("780m",), start_at=time.time() + 1.0))
    impatient = q.submit(command("impatient", device_prefs=("5060ti",), max_wait_s=1.0, after_max_wait="cpu"))
    h.until(lambda: render(q.get(later.id).reason).startswith("starts at "))
    h.until(lambda: q.get(impatient.id).state == "waiting")
    # No monitor tick from here on: the dispatcher's own timer must catch both moments.
    h.until(h.state(later.id, "succeeded"))
    h.until(h.state(impatient.id, "succeeded"))
    done = q.get(impatient.id)
    assert done.device == "cpu"
    assert re.match(
        r"on CPU after waiting \d+ s: GeForce RTX 5060 Ti busy \(llama-server", render(done.reason)
    )


def test_the_dispatcher_alone_wakes_for_a_timer(harness: Callable[..., Harness]) -> None:
    """No monitor tick, no request: the dispatcher sleeps until the timer's due time and runs it."""
    h = harness()
    q = h.start()
    fired: list[float] = []

    class Soon:
        at: float | None = time.time() + 0.3

        def next_due_s(self) -> float | None:
            return self.at

        def run_due(self, now_s: float) -> None:
            assert self.at is not None and now_s >= self.at
            self.at = None
            fired.append(now_s)

    q.add_timer(Soon())
    wait_for(lambda: fired, 10.0)
    assert len(fired) == 1


def test_a_stored_record_that_cannot_be_planned_fails_and_the_pass_goes_on(
    harness: Callable[..., Harness],
) -> None:
    """A start time past the year 9999 (stored before the limits existed) fails that task with its
    reason; the task behind it still runs."""
    h = harness()
    far = h.store.add(command("far", "pass", start_at=1e12), now=time.time())
    fine = h.store.add(command("fine", "pass"), now=time.time())
    h.start()
    h.until(h.state(fine.id, "succeeded"))
    rec = h.q.get(far.id)
    assert rec.state == "failed"
    assert (
        render(rec.reason)
        == "cannot be planned: its start time must be a date between the years 1970 and 9999"
    )
    assert (
        render(rec.reason, "ja") == "予定を立てられません: 開始時刻が 1970 年から 9999 年の範囲にありません"
    )


def test_prepare_launch_is_a_plan_tests_can_read(tmp_path: Path) -> None:
    """The pure part of a start: the argv, environment and header one attempt gets on a device (and
    the output file it takes, created empty)."""
    from gputray.monitor.records import DeviceInfo
    from gputray.scheduler.jobs.launch_plan import prepare_launch
    from gputray.scheduler.tasks.records import TaskRecord

    gpu = DeviceInfo(
        key="pci:0000:01:00.0",
        name="GeForce RTX 5060 Ti",
        vendor="nvidia",
        kind="discrete",
        backend="nvml",
        uuid="GPU-1234",
    )
    spec = TaskSpec(
        kind="vulkan",
        name="up",
        argv=("tool", "-i", "{file}", "-o", "{out}"),
        files=("/in/a.png",),
        out=f"{tmp_path}/{{stem}}.png",
        base_env={"HOME": "/home/me"},
    )
    rec = TaskRecord(
        id=7,
        spec=spec,
        state="running",
        submitted_at=0.0,
        attempts=2,
        reason=Said(text="redirected from the 780M"),
    )
    taken = str(tmp_path / "a.png")
    plan = prepare_launch(rec, gpu, [gpu], taken_outs={taken}, queue_file="/q.sqlite3", now_s=0.0)
    assert plan.argv[:3] == ("tool", "-i", "/in/a.png")
    assert plan.out == str(tmp_path / "a (2).png") and plan.argv[4] == plan.out
    assert Path(plan.out).read_bytes() == b"" and not Path(taken).exists()
    assert plan.env["CUDA_VISIBLE_DEVICES"] == "GPU-1234" and plan.env["HOME"] == "/home/me"
    assert "attempt 2" in plan.header and "note: redirected from the 780M" in plan.header
    assert "a.png is taken" in plan.notes[-1] and plan.notes[-1] in plan.header


# -- the queue a pueue / task-spooler user expects (issue 13) ------------------------------------------


def test_a_chain_runs_in_order_and_a_failure_fails_the_rest_until_retried(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    h = harness()
    q = h.start()
    flag = tmp_path / "b may succeed"
    a = q.submit(command("a", "print('a')", device_prefs=("cpu",)))
    b = q.submit(command("b", f"import os, sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 4)",
                         device_prefs=("cpu",), after=(a.id,)))  # fmt: skip
    c = q.submit(command("c", "print('c')", device_prefs=("cpu",), after=(b.id,)))
    h.until(h.state(c.id, "failed"))
    assert q.get(b.id).exit_code == 4 and q.get(c.id).attempts == 0  # c never ran
    assert render(q.get(c.id).reason) == "dependency #2 'b' failed: exited with status 4"
    assert q.get(a.id).ended_at <= q.get(b.id).started_at  # type: ignore[operator]
    flag.write_text("yes")
    q.retry(b.id)  # brings c back with it
    h.until(h.state(c.id, "succeeded"))
    assert q.get(b.id).attempts == 2 and "attempt 2," in h.log_text(b.id)
    assert q.get(b.id).ended_at <= q.get(c.id).started_at  # type: ignore[operator]
    with pytest.raises(Exception, match=r"--after names #99, which is no task"):
        q.submit(command("d", device_prefs=("cpu",), after=(99,)))


def test_edit_and_move_a_task_that_has_not_started(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    q.pause()
    a, b, c = (q.submit(command(n, "pass", device_prefs=("cpu",))) for n in "abc")
    q.edits.move_to(c.id, top=True)
    assert [r.id for r in q.list()] == [c.id, a.id, b.id]
    q.edits.move_to(a.id, after=b.id)
    assert [r.id for r in q.list()] == [c.id, b.id, a.id]
    q.edits.move_to(c.id, before=a.id)
    assert [r.id for r in q.list()] == [b.id, c.id, a.id]
    q.edits.move_to(b.id, bottom=True)
    assert [r.id for r in q.list()] == [c.id, a.id, b.id]
    edited = q.edits.edit(b.id, TaskPatch(priority=5, name="bee", env={"K": "v"}, device_prefs=("780m",)))
    assert (edited.spec.name, edited.spec.priority, dict(edited.spec.env)) == ("bee", 5, {"K": "v"})
    assert [r.id for r in q.list()] == [b.id, c.id, a.id]
    with pytest.raises(Exception, match=r"task #1 would wait for itself: #1 → #3 → #1"):
        q.edits.edit(c.id, TaskPatch(after=(a.id,)))
        q.edits.edit(a.id, TaskPatch(after=(c.id,)))
    with pytest.raises(Exception, match=r"edit cannot change 'argv'"):
        q.edits.edit(a.id, TaskPatch(argv=("rm", "-rf", "/")))
    # a device or memory no device here has is refused as at submit (it would wait for ever)
    with pytest.raises(SubmitRefused, match=r"a: no device matches '4090'; closest: "):
        q.edits.edit(a.id, TaskPatch(device_prefs=("4090",)))
    with pytest.raises(SubmitRefused, match=r"a: memory asks 999.0 TiB; the largest allowed device"):
        q.edits.edit(a.id, TaskPatch(vram_bytes=999 * 1024**4))
    assert q.get(a.id).spec.device_prefs == ("cpu",) and q.get(a.id).spec.vram_bytes is None
    with pytest.raises(Exception, match=r"task #3 cannot move next to itself"):
        q.edits.move_to(c.id, before=c.id)
    q.resume()
    for r in (a, b, c):
        h.until(h.state(r.id, "succeeded"))
    with pytest.raises(TaskStateError, match=r"task #1 already succeeded; edit is for tasks that have not"):
        q.edits.edit(a.id, TaskPatch(priority=1))


def test_remove_and_clean_take_the_logs_with_them(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    ok = q.submit(command("ok", "print('fine')", device_prefs=("cpu",)))
    bad = q.submit(command("bad", "raise SystemExit(2)", device_prefs=("cpu",)))
    long = q.submit(command("long", "import time; time.sleep(60)", device_prefs=("780m",)))
    h.until(lambda: q.get(ok.id).finished and q.get(bad.id).finished and q.get(long.id).state == "running")
    logs = {r.id: Path(q.get(r.id).log_path or "") for r in (ok, bad, long)}
    assert all(p.is_file() for p in logs.values())
    waiter = q.submit(command("waiter", "pass", device_prefs=("cpu",), after=(long.id,)))
    gone, errors = q.edits.remove([long.id, 99])
    assert gone == [] and errors == [
        f"task #{long.id} is running; `gputray remove --force {long.id}` cancels it first",
        "no task #99 in the queue",
    ]
    gone, errors = q.edits.remove([long.id], force=True)
    assert gone == [] and errors == [
        f"task #{long.id} stays: #{waiter.id} wait(s) for it (--after); remove or cancel them first"
    ]
    gone, errors = q.edits.remove([long.id, waiter.id], force=True)
    assert {r.id for r in gone} == {long.id, waiter.id} and errors == []
    assert not logs[long.id].exists()
    gone, kept = q.edits.clean(states={"failed"})
    assert [r.id for r in gone] == [bad.id] and kept == [] and not logs[bad.id].exists()
    assert logs[ok.id].is_file()
    gone, _ = q.edits.clean(older_than_s=3600)  # it ended just now
    assert gone == [] and logs[ok.id].is_file()
    gone, _ = q.edits.clean(older_than_s=0)
    assert [r.id for r in gone] == [ok.id] and not logs[ok.id].exists() and q.list() == []


def test_slots_come_from_the_config_by_device_name(harness: Callable[..., Harness]) -> None:
    h = harness(slots={"780m": 2, "cpu": 3})
    q = h.start()
    assert {d.name: d.slots for d in q.devices()} == {
        "GeForce RTX 5060 Ti": 1,  # the default: one job per GPU
        "Radeon 780M": 2,
        "CPU": 3,
    }


def test_wait_ended_answers_when_the_tasks_end_or_the_owner_stops(harness: Callable[..., Harness]) -> None:
    h = harness()
    q = h.start()
    quick = q.submit(command("quick", "pass", device_prefs=("cpu",)))
    ended = q.edits.wait_ended([quick.id], timeout_s=60)
    assert [r.state for r in ended if not isinstance(r, int)] == ["succeeded"]
    q.pause()
    held = q.submit(command("held", "pass", device_prefs=("cpu",)))
    now = q.edits.wait_ended([held.id], timeout_s=0.05)
    assert [r.state for r in now if not isinstance(r, int)] == ["waiting"]
    with pytest.raises(TaskNotFound):
        q.edits.wait_ended([99], timeout_s=1)
    q.edits.release_waiters()
    started = time.monotonic()
    q.edits.wait_ended([held.id], timeout_s=60)
    assert time.monotonic() - started < 30  # answered at once, not after the minute
