"""The queue a pueue / task-spooler user expects, against a real `gputray daemon --demo` and real jobs:
dependencies, wait, edit and move, slots, --env/--cwd, remove and clean (issue 13).

Order and overlap are judged by the jobs' own clocks: each job writes when it started and ended
(``stamp.py``); nothing here sleeps to let something happen or asserts on how long it took.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from child_signals import DEFAULT_CTRL_C
from test_daemon_e2e import PY, Daemon
from waiting import wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="the e2e daemon tests use POSIX signals"),
    pytest.mark.slow,
]

# stamp.py FOLDER NAME CODE [PEER]: writes NAME.start, prints "ready", waits for PEER.start if given (at
# most 60 s), writes NAME.end and exits with CODE ("@file": the code written in that file).
STAMP = textwrap.dedent(
    """
    import os, sys, time
    folder, name, code = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.path.join(folder, name + ".start"), "w") as f:
        f.write(repr(time.time()))
    print("ready", name, "in", os.getcwd(), "GREETING=" + os.environ.get("GREETING", "<unset>"), flush=True)
    if len(sys.argv) > 4:
        peer, deadline = os.path.join(folder, sys.argv[4] + ".start"), time.monotonic() + 60
        while not os.path.exists(peer) and time.monotonic() < deadline:
            time.sleep(0.02)
    if code.startswith("@"):
        code = open(code[1:]).read().strip()
    with open(os.path.join(folder, name + ".end"), "w") as f:
        f.write(repr(time.time()))
    sys.exit(int(code))
    """
)


class Queue:
    """A daemon plus the stamp folder its jobs write to."""

    def __init__(self, daemon: Daemon, home: Path) -> None:
        self.d = daemon
        self.home = home
        self.stamps = home / "stamps"
        self.stamps.mkdir(exist_ok=True)
        self.script = home / "stamp.py"
        self.script.write_text(STAMP)

    def cli(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.d.cli(*args, **kw)

    def run(self, name: str, code: str = "0", *options: str, peer: str | None = None, **kw: Any) -> int:
        argv = [PY, str(self.script), str(self.stamps), name, code, *([peer] if peer else [])]
        done = self.cli("run", "--device", "cpu", "--name", name, "--json", *options, "--", *argv, **kw)
        assert done.returncode == 0, done.stderr
        return int(json.loads(done.stdout)[0]["id"])

    def times(self, name: str) -> tuple[float, float]:
        return (
            float((self.stamps / f"{name}.start").read_text()),
            float((self.stamps / f"{name}.end").read_text()),
        )

    def listing(self) -> dict[str, Any]:
        out = self.cli("queue", "--all", "--json")
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    def task(self, task_id: int) -> dict[str, Any]:
        return next(t for t in self.listing()["tasks"] if t["id"] == task_id)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[Callable[..., Queue]]:
    started: list[Daemon] = []
    home = tmp_path / "home"
    home.mkdir()

    def start(config: str = "") -> Queue:
        if config:
            (home / "config").mkdir(exist_ok=True)
            (home / "config" / "config.toml").write_text(config)
        d = Daemon(home, None).start()
        started.append(d)
        return Queue(d, home)

    yield start
    for d in started:
        d.stop()


def test_a_chain_runs_in_order_and_a_failed_link_fails_the_rest(queue: Callable[..., Queue]) -> None:
    q = queue()
    code_b = q.home / "b.code"
    code_b.write_text("6")
    a = q.run("a")
    b = q.run("b", f"@{code_b}", "--after", str(a))
    c = q.run("c", "0", "--after", f"#{b}")
    done = q.cli("wait", str(c))
    assert done.returncode == 1, done.stdout + done.stderr  # c ended without an exit code of its own
    assert f"dependency #{b} 'b' failed: exited with status 6" in done.stdout
    assert q.cli("wait", str(a), str(b), str(c)).returncode == 6  # the first non-zero: b's own
    assert q.times("a")[1] <= q.times("b")[0]
    assert not (q.stamps / "c.start").exists()  # c never ran
    assert q.task(c)["reason"].startswith(f"dependency #{b} 'b' failed")
    assert q.task(c)["after"] == [b] and q.task(b)["after"] == [a]
    # --after-any: after it ended, however
    anyway = q.run("anyway", "0", "--after", str(b), "--after-any")
    assert q.cli("wait", str(anyway)).returncode == 0
    # retry of the failed link brings back what it failed; attempts count on
    code_b.write_text("0")
    retried = q.cli("retry", str(b))
    assert retried.returncode == 0, retried.stderr
    assert q.cli("wait", str(c)).returncode == 0
    assert q.times("b")[1] <= q.times("c")[0]
    assert q.task(b)["attempts"] == 2 and "attempt 2," in q.cli("logs", str(b)).stdout
    # unknown ids and cycles are refused, and nothing is queued
    before = len(q.listing()["tasks"])
    unknown = q.cli("run", "--after", "999", "--", PY, "-c", "pass")
    assert unknown.returncode == 1 and "#999, which is no task in the queue" in unknown.stderr
    assert q.cli("pause").returncode == 0
    x = q.run("x")
    y = q.run("y", "0", "--after", str(x))
    cycle = q.cli("edit", str(x), "--after", str(y))
    assert cycle.returncode == 1 and f"#{x} → #{y} → #{x} (a cycle)" in cycle.stderr
    assert q.task(x)["after"] == [] and len(q.listing()["tasks"]) == before + 2


def test_wait_gives_the_exit_status_stops_on_ctrl_c_and_says_when_no_owner_runs(
    queue: Callable[..., Queue],
) -> None:
    q = queue()
    direct = q.cli(
        "run", "--wait", "--device", "cpu", "--", PY, "-c", "print('hi from the job'); raise SystemExit(5)"
    )
    assert direct.returncode == 5, direct.stderr  # as if it ran here
    assert "hi from the job" in direct.stdout and "waiting for it to end" in direct.stderr
    ok = q.run("ok")
    assert q.cli("wait", str(ok)).returncode == 0
    unknown = q.cli("wait", "424242")
    assert unknown.returncode == 1 and "no task #424242" in unknown.stderr

    # Ctrl+C stops the waiting, not the job: once the job said "ready" through --follow
    long = q.run("long", "0", "--timeout", "2m", peer="never")
    waiter = _follower(q, long)
    waiter.send_signal(signal.SIGINT)
    _, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 130, err
    assert f"stopped waiting; #{long} goes on in the queue" in err
    assert q.task(long)["state"] == "running"

    # the owner stops while someone waits: 3, as with no owner at all
    waiter = _follower(q, long)
    q.d.stop()
    _, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 3, err
    assert "the gputray owner went away" in err
    gone = q.cli("wait", str(ok))
    assert gone.returncode == 3 and "no gputray owner is running" in gone.stderr


def _follower(q: Queue, task_id: int) -> subprocess.Popen[str]:
    """`gputray wait --follow ID`, returned once it has printed the job's "ready" line: it is talking
    to the owner and waiting."""
    waiter = subprocess.Popen(
        [PY, "-m", "gputray.gui.entry", "wait", "--follow", str(task_id)],
        env=q.d.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even to a suite run with SIGINT ignored
    )
    assert waiter.stdout is not None
    for line in waiter.stdout:  # the job's log as it grows; ends at EOF should the waiter die
        if line.startswith("ready "):
            break
    return waiter


def test_edit_and_move_change_what_starts_next(queue: Callable[..., Queue]) -> None:
    q = queue()
    assert q.cli("pause", "cpu").returncode == 0
    a, b, c = (q.run(n) for n in "abc")
    moved = q.cli("move", str(c), "--top")
    assert moved.returncode == 0, moved.stderr
    edited = q.cli("edit", str(b), "--priority", "5", "--name", "bee", "--env", "GREETING=edited")
    assert edited.returncode == 0 and "bee: " in edited.stdout and "priority 5" in edited.stdout, (
        edited.stderr
    )
    assert [t["id"] for t in q.listing()["tasks"]] == [b, c, a]
    assert q.cli("move", str(a), "--before", str(c)).returncode == 0
    assert [t["id"] for t in q.listing()["tasks"]] == [b, a, c]
    assert q.cli("resume", "cpu").returncode == 0
    assert q.cli("wait", str(a), str(b), str(c)).returncode == 0
    starts = sorted((q.times(n)[0], n) for n in "abc")
    assert [n for _, n in starts] == ["b", "a", "c"]  # one slot: one after another, in the new order
    assert q.times("b")[1] <= q.times("a")[0] <= q.times("a")[1] <= q.times("c")[0]
    assert "GREETING=edited" in q.cli("logs", str(b)).stdout
    late = q.cli("edit", str(a), "--priority", "1")
    assert (
        late.returncode == 1
        and f"task #{a} already succeeded; edit is for tasks that have not started" in late.stderr
    )
    long = q.run("long", "0", "--timeout", "2m", peer="never")
    wait_for(lambda: (q.stamps / "long.start").exists(), 30, "the long job to start")
    running = q.cli("edit", str(long), "--device", "780m")
    assert running.returncode == 1 and f"task #{long} is running on the CPU since" in running.stderr
    no_move = q.cli("move", str(long), "--top")
    assert no_move.returncode == 1 and "only queued or waiting tasks move" in no_move.stderr
    assert q.cli("cancel", str(long)).returncode == 0


def test_two_cpu_slots_run_two_jobs_at_once_with_their_env_and_folder(queue: Callable[..., Queue]) -> None:
    q = queue("[devices.cpu]\nslots = 2\n")
    cpu = next(d for d in q.listing()["devices"] if d["key"] == "cpu")
    assert cpu == {"key": "cpu", "name": "CPU", "slots": 2, "running": 0, "paused": False, "free_in_s": 0.0}
    work = q.home / "work dir"
    work.mkdir()
    # each waits until the other has started: they can only both succeed side by side
    one = q.run("one", "0", "--env", "GREETING=hello 世界", "--cwd", str(work), peer="two")
    two = q.run("two", "0", peer="one", cwd=work)
    assert q.cli("wait", str(one), str(two)).returncode == 0
    start_one, end_one = q.times("one")
    start_two, end_two = q.times("two")
    assert start_one < end_two and start_two < end_one  # they overlapped
    log_one = q.cli("logs", str(one)).stdout
    assert f"ready one in {work} GREETING=hello 世界" in log_one
    assert f"ready two in {work} GREETING=<unset>" in q.cli("logs", str(two)).stdout  # typed there
    listed = {t["id"]: t for t in q.listing()["tasks"]}
    assert listed[one]["cwd"] == str(work) and listed[one]["priority"] == 0
    # a task file: env and cwd keys; without cwd, the folder where `submit` was typed
    typed = q.home / "typed here"
    typed.mkdir()
    files = q.home / "task files"
    files.mkdir()
    argv = [PY, str(q.script), str(q.stamps), "filed", "0"]
    (files / "job.toml").write_text(
        f"argv = {json.dumps(argv)}\ndevices = ['cpu']\n[env]\nGREETING = 'from the file'\n"
    )
    filed = q.cli("submit", "--task", str(files / "job.toml"), "--json", cwd=typed)
    assert filed.returncode == 0, filed.stderr
    filed_id = json.loads(filed.stdout)[0]["id"]
    assert q.cli("wait", str(filed_id)).returncode == 0
    assert f"ready filed in {typed} GREETING=from the file" in q.cli("logs", str(filed_id)).stdout
    moved = q.cli(
        "submit", "--task", str(files / "job.toml"), "--cwd", str(work), "--env", "GREETING=cli", "--json"
    )
    moved_id = json.loads(moved.stdout)[0]["id"]
    assert q.cli("wait", str(moved_id)).returncode == 0
    assert f"ready filed in {work} GREETING=cli" in q.cli("logs", str(moved_id)).stdout
    missing = q.cli("run", "--cwd", str(q.home / "nowhere"), "--", PY, "-c", "pass")
    assert missing.returncode == 2 and "--cwd" in missing.stderr and "no such folder" in missing.stderr


def test_remove_and_clean_take_their_logs(queue: Callable[..., Queue]) -> None:
    q = queue()
    good = q.run("good")
    bad = q.run("bad", "7")
    assert q.cli("wait", str(good), str(bad)).returncode == 7
    logs = {t["id"]: Path(t["log_path"]) for t in q.listing()["tasks"]}
    assert logs[good].is_file() and logs[bad].is_file()
    narrow = q.cli("queue", "--all", env={"COLUMNS": "80"})
    assert narrow.returncode == 0 and all(len(line) <= 80 for line in narrow.stdout.splitlines()), (
        narrow.stdout
    )
    failed = q.cli("queue", "--filter", "state=failed", "--json")
    assert [t["id"] for t in json.loads(failed.stdout)["tasks"]] == [bad]
    assert q.cli("clean", "--older-than", "7d").stdout.strip() == "nothing removed"
    cleaned = q.cli("clean", "--state", "failed")
    assert cleaned.returncode == 0 and f"removed #{bad} bad (failed)" in cleaned.stdout
    assert not logs[bad].exists() and logs[good].is_file()
    assert [t["id"] for t in q.listing()["tasks"]] == [good]
    assert q.cli("clean", "--keep", "1").stdout.strip() == "nothing removed"  # the newest ended one stays
    negative = q.cli("clean", "--keep", "-1")
    assert negative.returncode == 2 and "--keep -1: expected a count of tasks" in negative.stderr
    long = q.run("long", "0", "--timeout", "2m", peer="never")
    wait_for(lambda: (q.stamps / "long.start").exists(), 30, "the long job to start")
    refused = q.cli("remove", str(long))
    assert refused.returncode == 1 and f"`gputray remove --force {long}` cancels it first" in refused.stderr
    forced = q.cli("remove", "--force", str(long), str(good))
    assert forced.returncode == 0, forced.stderr
    assert q.listing()["tasks"] == [] and not logs[good].exists()
    assert not [p.name for p in logs[good].parent.iterdir() if p.name.startswith("task-")]
    assert not (q.stamps / "long.end").exists()  # it was stopped, not left to finish
