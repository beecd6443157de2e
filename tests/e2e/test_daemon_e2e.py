"""The whole path with real processes: `gputray daemon --demo` in a subprocess, the CLI and the socket.

Each test starts its own daemon with GPUTRAY_HOME in a tmp dir. Jobs are real processes; the
simulated GPUs follow them. Waits poll with generous deadlines; nothing asserts on time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import tomli_w
from child_signals import DEFAULT_CTRL_C
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waiting import wait_for

from gputray.resources import resource_path
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import R
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.taskfile import TASK_KEYS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the e2e daemon tests use POSIX signals")

NVIDIA = "pci:0000:01:00.0"
AMD = "pci:0000:64:00.0"
LLM_BUSY = resource_path("scenarios/llm_busy.toml")
PY = sys.executable

# Prints the variables a job receives, one per line, then exits.
ENV_PRINTER = textwrap.dedent(
    """
    import os, sys
    for name in ("GPUTRAY_TASK_ID", "GPUTRAY_DEVICE", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                 "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        print(name + "=" + os.environ.get(name, "<unset>"))
    print("ARGV=" + repr(sys.argv[1:]))
    """
)


class Daemon:
    def __init__(self, home: Path, scenario: Path | None) -> None:
        self.home = home
        self.scenario = scenario
        self.env = {**os.environ, "GPUTRAY_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.proc: subprocess.Popen[str] | None = None
        self.paths = Paths(home / "config", home / "data", home / "state", home / "run")
        self.client: ipc.IpcClient | None = None

    def start(self) -> Daemon:
        cmd = [PY, "-m", "gputray.gui.entry", "daemon", "--demo"]
        if self.scenario is not None:
            cmd += ["--demo-scenario", str(self.scenario)]
        self.stderr = open(self.home / f"daemon-stderr-{time.monotonic_ns()}.txt", "w")  # noqa: SIM115
        # Ctrl+C stops it as a terminal's would, even in a suite run with SIGINT ignored (nohup, &)
        self.proc = subprocess.Popen(
            cmd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            start_new_session=True,
            preexec_fn=DEFAULT_CTRL_C,
        )
        wait_for(self._answers, 40.0, "the daemon to answer ping")
        self.client = ipc.IpcClient(self.paths, timeout_s=20.0)
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}: {self.stderr_text()}")
        try:
            return bool(ipc.ask(self.paths, rq.Ping()).ready)
        except ipc.IpcError:
            return False

    def stderr_text(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.home.glob("daemon-stderr-*.txt")))

    def ask(self, request: rq.Request[R]) -> R:
        assert self.client is not None
        return self.client.ask(request)

    def task(self, task_id: int) -> TaskView:
        return self.ask(rq.Get(id=task_id)).task

    def wait_state(self, task_id: int, states: set[str], timeout_s: float = 30.0) -> TaskView:
        return wait_for(
            lambda: (t := self.task(task_id)).state in states and t,
            timeout_s,
            f"task {task_id} to reach {states} (now {self.task(task_id)})",
        )

    def cli(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "gputray.gui.entry", *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=30,
            cwd=cwd or self.home,
        )

    def run_job(self, argv: list[str], **overrides: Any) -> int:
        result = self.ask(rq.Run(argv=argv, overrides=overrides, cwd=str(self.home)))
        return int(result.tasks[0].id)

    def log_text(self, task_id: int) -> str:
        return str(self.ask(rq.Logs(id=task_id)).text)

    def kill9(self) -> None:
        assert self.proc is not None
        if self.client is not None:
            self.client.close()
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.stderr.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def daemons(home: Path) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []
    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def start(scenario: Path | None = None) -> Daemon:
        d = Daemon(home, scenario).start()
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()
    # jobs left behind by a kill -9 test must not outlive the test
    for proc in psutil.process_iter(["environ"]):
        with contextlib.suppress(psutil.Error):
            env = proc.info.get("environ") or {}
            if env.get("GPUTRAY_HOME") == str(home) and proc.pid != os.getpid() and proc.pid not in before:
                proc.kill()


@pytest.fixture
def daemon(daemons: Callable[..., Daemon]) -> Daemon:
    """One daemon of the simulated pair on ``home`` (what most e2e tests need)."""
    return daemons()


def env_lines(log: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in log.splitlines() if "=" in line and not line.startswith(" "))


# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_wait_redirect_and_cpu_while_an_llm_holds_the_5060ti(daemons: Callable[..., Daemon]) -> None:
    d = daemons(LLM_BUSY)
    job = [PY, "-c", ENV_PRINTER]
    waiting = d.run_job(job, device_prefs=["5060ti"], on_busy="wait", name="wait for it")
    redirected = d.run_job(job, device_prefs=["5060ti", "780m"], on_busy="redirect", name="redirect")
    on_cpu = d.run_job(job, device_prefs=["5060ti"], on_busy="cpu", name="cpu instead")

    r = d.wait_state(redirected, {"succeeded"})
    assert r.device == AMD
    assert "5060" in render(r.reason) or "redirect" in render(r.reason).lower()
    c = d.wait_state(on_cpu, {"succeeded"})
    assert c.device == "cpu"

    w = d.task(waiting)
    assert w.state in ("queued", "waiting"), w
    assert "llama-server" in render(w.reason), render(w.reason)  # a reason a person can read

    amd_env = env_lines(d.log_text(redirected))
    assert amd_env["GPUTRAY_DEVICE"] == AMD
    assert amd_env["CUDA_VISIBLE_DEVICES"] == "<unset>"  # HIP honours it too: removed
    assert amd_env["ROCR_VISIBLE_DEVICES"] != "<unset>"
    assert amd_env["GPUTRAY_TASK_ID"] == str(redirected)
    cpu_env = env_lines(d.log_text(on_cpu))
    assert cpu_env["GPUTRAY_DEVICE"] == "cpu"
    assert cpu_env["CUDA_VISIBLE_DEVICES"] == ""
    assert cpu_env["HIP_VISIBLE_DEVICES"] == ""

    # the CLI shows the same, with exactly the promised keys
    out = d.cli("queue", "--all", "--json")
    assert out.returncode == 0, out.stderr
    listing = {t["id"]: t for t in json.loads(out.stdout)["tasks"]}
    assert set(listing[redirected]) == {
        "id", "name", "kind", "state", "device", "device_name", "env", "reason", "exit_code", "attempts",
        "submitted_at", "started_at", "ended_at", "log_path", "priority", "after", "after_any", "cwd",
        "machine", "remote_id", "origin", "energy_j", "energy_shared", "power_avg_w", "prefer", "family",
        "offer", "estimate_s", "paused_at", "paused_s", "vram_need", "vram_need_source", "energy_estimated_s",
        "progress", "eta_s", "on_late",
    }  # fmt: skip
    assert listing[redirected]["device_name"] == "Radeon 780M"
    assert listing[redirected]["exit_code"] == 0
    assert listing[waiting]["state"] in ("queued", "waiting")

    out = d.cli("cancel", str(waiting))
    assert out.returncode == 0, out.stderr
    assert d.task(waiting).state == "cancelled"


@pytest.mark.slow
def test_kill_9_mid_run_loses_nothing(daemons: Callable[..., Daemon], home: Path) -> None:
    """The owner killed while two jobs run: they run on under their supervisors; the next owner
    adopts them (same processes, no second attempt), and the task queued behind one runs after it."""
    d = daemons()
    marker, go = home / "attempts.txt", home / "go"
    waits = (
        "import os, sys, time; p, go = sys.argv[1], sys.argv[2]; open(p, 'a').write('x');"
        " print('attempt', len(open(p).read()), flush=True)\nwhile not os.path.exists(go): time.sleep(0.05)"
    )
    a = d.run_job([PY, "-c", waits, str(marker), str(go)], device_prefs=["5060ti"], retries=1, backoff_s=0)
    b = d.run_job(
        [PY, "-c", "import time; print('b runs', flush=True); time.sleep(120)"],
        device_prefs=["780m"],
        name="no retries",
    )
    c = d.run_job(
        [PY, "-c", "print('c done')"], device_prefs=["5060ti"], on_busy="wait", name="queued behind a"
    )
    d.wait_state(a, {"running"})
    rb = d.wait_state(b, {"running"})
    wait_for(lambda: "attempt 1" in d.log_text(a) and "b runs" in d.log_text(b), 30, "both jobs to print")
    assert d.task(c).state in ("queued", "waiting")
    b_log = rb.log_path
    pids = [d.ask(rq.Get(id=x)).pid for x in (a, b)]
    assert all(isinstance(pid, int) and psutil.pid_exists(pid) for pid in pids)  # saved with "running"

    d.kill9()
    # No owner now: the CLI still shows the queue as saved (read-only: nothing recovered yet) and the logs.
    offline = d.cli("queue", "--all", "--json")
    assert offline.returncode == 0, offline.stderr
    assert "no gputray owner is running: showing the queue as saved on disk" in offline.stderr
    saved = {t["id"]: t["state"] for t in json.loads(offline.stdout)["tasks"]}
    assert saved[a] == saved[b] == "running" and saved[c] in ("queued", "waiting")
    assert "b runs" in d.cli("logs", str(b)).stdout
    d2 = daemons()

    assert [d2.ask(rq.Get(id=x)).pid for x in (a, b)] == pids  # adopted: the same processes run on
    assert d2.task(a).state == d2.task(b).state == "running"
    assert d2.cli("cancel", str(b)).returncode == 0
    assert d2.task(b).state == "cancelled"
    go.touch()
    fa = d2.wait_state(a, {"succeeded"}, 40)
    assert fa.attempts == 1 and marker.read_text() == "x"  # no second attempt beside the first
    fc = d2.wait_state(c, {"succeeded"}, 40)
    assert fc.exit_code == 0
    assert Path(b_log).exists() and "b runs" in Path(b_log).read_text()  # logs kept
    for pid in pids:
        wait_for(
            lambda pid=pid: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        )


@pytest.mark.slow
def test_socket_permissions_and_a_single_owner(daemons: Callable[..., Daemon]) -> None:
    d = daemons()
    sock = ipc.socket_path(d.paths)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    assert os.stat(sock).st_uid == os.getuid()
    second = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "daemon", "--demo"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1
    assert "another gputray owner" in second.stderr
    assert d.ask(rq.Ping()).pid == d.proc.pid  # type: ignore[union-attr]  # the first one still owns it


def test_no_owner_tells_how_to_start_one(home: Path) -> None:
    env = {**os.environ, "GPUTRAY_HOME": str(home)}
    out = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "cancel", "1"], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 1  # with no owner, cancel acts on the saved queue: there is no task 1
    assert "no gputray owner is running: acted on the saved queue" in out.stderr
    assert "no task #1 in the queue" in out.stderr and "warning" not in out.stderr
    follow = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "logs", "1", "--follow"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert follow.returncode == 3 and "gputray daemon" in follow.stderr  # watching needs an owner
    listing = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "queue"], env=env, capture_output=True, text=True, timeout=30
    )
    assert listing.returncode == 0 and listing.stdout.strip() == "the queue is empty"
    assert "no gputray owner is running: showing the queue as saved on disk" in listing.stderr
    assert not (home / "data").exists()  # looking created nothing


HOSTILE_NAMES = [
    "a'; touch pwned #.png",
    "$(touch pwned2).txt",
    "`touch pwned3`.txt",
    "日本語 ファイル; rm -rf ~.txt",
]


@pytest.mark.slow
def test_hostile_file_names_are_data_not_code(daemons: Callable[..., Daemon], home: Path) -> None:
    d = daemons()
    work = home / "work dir"
    work.mkdir()
    for name in HOSTILE_NAMES:
        (work / name).write_text("x")
    task_file = work / "echo.toml"
    task_file.write_text(
        'kind = "command"\n'
        "placeholders = true\n"
        f'argv = [{json.dumps(PY)}, "-c", "import sys; print(sys.argv[1:])", "{{file}}", "{{stem}}"]\n'
        f"files = {json.dumps(HOSTILE_NAMES, ensure_ascii=False)}\n"
        'devices = ["cpu"]\n'
    )
    out = d.cli("submit", "--task", str(task_file), "--json", cwd=work)
    assert out.returncode == 0, out.stderr
    task_id = json.loads(out.stdout)[0]["id"]
    run = d.cli(
        "run",
        "--device",
        "cpu",
        "--json",
        "--",
        PY,
        "-c",
        "import sys; print('RUN', sys.argv[1:])",
        *HOSTILE_NAMES,
        cwd=work,
    )
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)[0]["id"]
    d.wait_state(task_id, {"succeeded"})
    d.wait_state(run_id, {"succeeded"})
    assert str(work / HOSTILE_NAMES[0]) in d.log_text(task_id)
    assert repr(HOSTILE_NAMES) in d.log_text(run_id)
    for where in (work, home, Path.cwd()):
        assert not any((where / p).exists() for p in ("pwned", "pwned2", "pwned3"))


@pytest.mark.slow
def test_cli_round_trip_logs_retry_pause(daemons: Callable[..., Daemon], home: Path) -> None:
    d = daemons()
    out = d.cli("pause", "780m")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "paused: Radeon 780M\n"  # by the name people know it; `pause --json` keeps keys
    held = d.cli("run", "--device", "780m", "--json", "--", PY, "-c", "print('held')")
    held_id = json.loads(held.stdout)[0]["id"]
    failing = d.cli("run", "--device", "cpu", "--json", "--", PY, "-c", "print('oops'); raise SystemExit(4)")
    fail_id = json.loads(failing.stdout)[0]["id"]
    t = d.wait_state(fail_id, {"failed"})
    assert t.exit_code == 4
    logs = d.cli("logs", str(fail_id))
    assert logs.returncode == 0 and "oops" in logs.stdout
    assert d.task(held_id).state in ("queued", "waiting")  # its device is paused
    assert d.cli("resume", "780m").returncode == 0
    d.wait_state(held_id, {"succeeded"})
    first_end = t.ended_at
    again = d.cli("retry", str(fail_id))
    assert again.returncode == 0, again.stderr
    wait_for(lambda: (x := d.task(fail_id)).state == "failed" and x.ended_at != first_end, 30, "the retry")
    assert d.log_text(fail_id).splitlines().count("oops") == 2  # one log per task, both runs kept
    (home / "photos").mkdir()
    (home / "notes.txt").write_text("x")
    (home / "ok.py").write_text("print('ok')")
    before = d.cli("queue", "--all", "--json").stdout
    several = d.cli("submit", "ok.py", "missing.mp4", "photos/", "notes.txt")
    assert several.returncode == 1
    assert "3 of 4 files cannot be queued, so none was queued" in several.stderr
    assert "submit the files again" in several.stderr
    for line in ("missing.mp4: no such file", "photos: is a folder", "notes.txt: no recipe handles"):
        assert line in several.stderr, several.stderr
    assert d.cli("queue", "--all", "--json").stdout == before  # all or nothing
    bad = d.cli("submit", "--task", str(home / "missing.toml"))
    assert bad.returncode == 1 and "missing.toml" in bad.stderr
    usage = d.cli("submit", "x.png", "--max-wait", "soon")
    assert usage.returncode == 2 and "duration" in usage.stderr
    unknown = d.cli("cancel", "999999")
    assert unknown.returncode == 1 and "999999" in unknown.stderr


# --------------------------------------------------------------------------------------------------
# 1,000 malformed messages and task files; the daemon must answer each one and stay up

FUZZ_OPS = sorted(set(ipc.OPS) - {"shutdown", "pause", "resume"})
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=10,
)
messages = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"op": st.sampled_from(FUZZ_OPS) | st.text(max_size=8)},
        optional={
            "args": st.dictionaries(
                st.sampled_from(
                    [
                        "id",
                        "ids",
                        "files",
                        "argv",
                        "task_file",
                        "all",
                        "delta",
                        "offset",
                        "spec",
                        "overrides",
                        "cron",
                    ]
                )
                | st.text(max_size=6),
                scalars,
                max_size=4,
            )
        },
    ).map(lambda v: json.dumps(v).encode()),
)
TASK_KEY_CHOICES = [*sorted(TASK_KEYS), "bogus"]
toml_scalars = (
    st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=10)
)
task_tables = st.dictionaries(
    st.sampled_from(TASK_KEY_CHOICES),
    toml_scalars
    | st.lists(st.text(max_size=8), max_size=3)
    | st.dictionaries(st.text(max_size=5), toml_scalars, max_size=2),
    max_size=6,
).map(
    lambda t: (
        {**t, "argv": ["/nonexistent/" + str(x) for x in t["argv"]]} if isinstance(t.get("argv"), list) else t
    )
)
task_texts = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    task_tables.map(lambda t: tomli_w.dumps(t)),
    task_tables.map(lambda t: tomli_w.dumps({"task": t})),
)


@pytest.mark.slow
def test_1000_malformed_messages_and_task_files_never_stop_the_daemon(
    daemons: Callable[..., Daemon], home: Path
) -> None:
    d = daemons()
    kinds: list[str] = []
    client = ipc.IpcClient(d.paths, timeout_s=20.0)

    @settings(max_examples=700, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(payload=messages)
    def fuzz_messages(payload: bytes) -> None:
        reply = client.send_raw(payload)
        assert isinstance(reply, dict) and isinstance(reply.get("ok"), bool)
        if not reply["ok"]:
            kinds.append(reply["error"]["type"])

    counter = iter(range(10**6))

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(text=task_texts)
    def fuzz_task_files(text: str) -> None:
        path = home / f"fuzz-{next(counter)}.toml"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        reply = client.send_raw(json.dumps({"op": "submit", "args": {"task_file": str(path)}}).encode())
        assert isinstance(reply.get("ok"), bool)
        if not reply["ok"]:
            kinds.append(reply["error"]["type"])
            assert reply["error"]["message"]

    fuzz_messages()
    fuzz_task_files()
    client.close()
    assert d.proc is not None and d.proc.poll() is None
    assert d.ask(rq.Ping()).ready is True
    assert "InternalError" not in kinds, [k for k in kinds if k == "InternalError"]
    out = d.cli("queue", "--all", "--json")
    assert out.returncode == 0 and isinstance(json.loads(out.stdout)["tasks"], list)


@pytest.mark.slow
def test_daemon_stop_is_graceful(daemons: Callable[..., Daemon]) -> None:
    d = daemons()
    job = d.run_job(
        [PY, "-c", "import time; print('long', flush=True); time.sleep(60)"], device_prefs=["cpu"]
    )
    pid = wait_for(lambda: d.ask(rq.Get(id=job)).pid, 30, "the job's pid")
    out = d.cli("daemon", "--stop")
    assert out.returncode == 0, out.stderr
    assert d.proc is not None and d.proc.wait(20) == 0
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not ipc.socket_path(d.paths).exists()
    again = d.cli("queue", "--all", "--json")
    assert again.returncode == 0, again.stderr  # no owner now: the queue as saved on disk
    assert "no gputray owner is running" in again.stderr
    (saved,) = json.loads(again.stdout)["tasks"]
    assert saved["id"] == job and saved["state"] not in ("queued", "waiting", "starting", "running")


def test_jobs_start_from_the_submitters_environment(daemons: Callable[..., Daemon], home: Path) -> None:
    """As typed in the caller's shell: a tool on *their* PATH (an activated venv, ~/bin) is found at
    submit and when the job runs, and their variables reach the job; gputray's own still win."""
    bin_dir = home / "my bin"
    bin_dir.mkdir()
    tool = bin_dir / "my-tool"
    tool.write_text('#!/bin/sh\necho "my-tool sees MYVAR=$MYVAR and device=$GPUTRAY_DEVICE"\n')
    tool.chmod(0o755)
    d = daemons()  # its PATH lacks "my bin"
    mine = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MYVAR": "hello 世界",
        "GPUTRAY_DEVICE": "x",
    }
    refused = d.cli("run", "--device", "cpu", "--", "my-tool")
    assert refused.returncode != 0 and "my-tool" in refused.stderr  # not on the daemon's PATH, nor ours
    queued = d.cli("run", "--device", "cpu", "--json", "--", "my-tool", env=mine)
    assert queued.returncode == 0, queued.stderr
    task_id = json.loads(queued.stdout)[0]["id"]
    d.wait_state(task_id, {"succeeded"})
    assert "my-tool sees MYVAR=hello 世界 and device=cpu" in d.log_text(task_id)
