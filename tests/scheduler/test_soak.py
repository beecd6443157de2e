"""A soak of the queue under attack (#32, "How it is proven"): random jobs against a real
`gputray daemon --demo` on a small real file system (a tmpfs, root only), while the owner, its supervisor
host and the jobs' supervisors are killed at random (SIGKILL) and the disk is filled and freed. Then the
owner runs undisturbed until every task has ended, and a ledger each job appends to (outside the small
file system: its start, and its end with the exit status it is about to return) proves:

* **none lost**: every task submitted has ended (succeeded or failed), none left running or queued;
* **none run twice**: a task never starts again after a run that really ended well (unless the soak
  killed that run's supervisor, the one witness of how it ended), and never more often than its
  attempts allow (``1 + retries``);
* **every recorded end is the true one**: "succeeded" only where the last run wrote its end with 0; a
  failure with an exit code only where the last run wrote that code.

Bounded: ``GPUTRAY_SOAK_SECONDS`` of attacks (6 s by default, for the suite's time; set it to 300 or
more for a real soak: `.ci/run`'s soak step runs 120 s). Clock steps are not part of it: stepping the
machine's clock would disturb every other process on it (``test_clock_set.py`` covers a set clock).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path

import psutil
import pytest
from small_disk import PY, Daemon, fill, small_disk
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskPatch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="real signals, a tmpfs")

SOAK_S = float(os.environ.get("GPUTRAY_SOAK_SECONDS", "6"))
FINISHED = ("succeeded", "failed", "cancelled")
JOB = """
import os, sys, time
path = os.path.join({ledger!r}, os.environ["GPUTRAY_TASK_ID"])
token = os.urandom(4).hex()
def note(line):
    with open(path, "a") as f:
        f.write(line + "\\n")
        f.flush()
        os.fsync(f.fileno())
note("start " + token)
time.sleep({seconds})
note("end " + token + " {code}")
sys.exit({code})
"""


def _ledger(ledger: Path, task_id: int) -> list[list[str]]:
    try:
        return [line.split() for line in (ledger / str(task_id)).read_text().splitlines() if line]
    except FileNotFoundError:
        return []


class Soak:
    def __init__(self, tmp: Path, fs: Path, rng: random.Random) -> None:
        self.rng = rng
        self.fs = fs
        self.ledger = tmp / "ledger"
        self.ledger.mkdir()
        self.daemon = Daemon(fs / "home", tmp / "daemon.txt")
        self.retries: dict[int, int] = {}
        self.sup_killed: set[int] = set()  # tasks whose supervisor the soak killed (their end is unknowable)
        self.filler: Path | None = None
        self.log: list[str] = []
        self.unfinished: list[str] = []  # the tasks not ended at the last look

    def up(self) -> bool:
        return self.daemon.proc is not None and self.daemon.proc.poll() is None

    def submit(self) -> None:
        if not self.up() or self.filler is not None:
            return
        retries = self.rng.choice([0, 1, 2])
        code = self.rng.choice([0, 0, 0, 1, 3])
        seconds = self.rng.choice([0.05, 0.2, 0.5, 1.0, 2.0])
        argv = [PY, "-c", JOB.format(ledger=str(self.ledger), seconds=seconds, code=code)]
        patch = TaskPatch(retries=retries, backoff_s=0.0)
        with contextlib.suppress(ipc.IpcError):
            with ipc.IpcClient(self.daemon.paths, timeout_s=20) as client:
                task = client.ask(rq.Run(argv=argv, name=f"soak {code}", overrides=patch)).tasks[0]
            self.retries[int(task.id)] = retries

    def kill_owner(self) -> None:
        if self.up():
            self.log.append("owner killed")
            self.daemon.kill()

    def start_owner(self) -> None:
        if not self.up() and self.filler is None:  # an owner does not start on a full disk
            self.daemon.start()

    def kill_host(self) -> None:
        if not self.up():
            return
        assert self.daemon.proc is not None
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.daemon.proc.pid).children():
                if "--host" in child.cmdline():
                    self.log.append("host killed")
                    child.kill()

    def kill_supervisor(self) -> None:
        runs = list(self.daemon.paths.logs_dir.glob("task-*.run.json"))
        if not runs:
            return
        try:
            doc = json.loads(self.rng.choice(runs).read_bytes())
            pid, task_id = int(doc["supervisor_pid"]), int(doc["task_id"])
            proc = psutil.Process(pid)
            if "supervisor.py" not in " ".join(proc.cmdline()):
                return
            self.sup_killed.add(task_id)
            self.log.append(f"supervisor of #{task_id} killed")
            proc.kill()
        except (OSError, ValueError, KeyError, psutil.Error):
            pass

    def crash_while_full(self) -> None:
        """The disk fills while jobs end (their ends held in the owner's memory), the owner is killed,
        room returns, a new owner starts: the ends must come back from the supervisors' files."""
        if not self.up() or self.filler is not None:
            return
        self.fill_or_free()
        time.sleep(self.rng.uniform(0.3, 1.5))
        self.kill_owner()
        self.fill_or_free()
        self.start_owner()

    def fill_or_free(self) -> None:
        if self.filler is None:
            self.log.append("disk filled")
            self.filler = fill(self.fs, f"filler-{self.rng.randrange(1 << 30)}")
        else:
            self.log.append("disk freed")
            self.filler.unlink()
            self.filler = None


def test_soak_nothing_lost_nothing_run_twice_every_end_true(tmp_path: Path) -> None:
    seed = int(os.environ.get("GPUTRAY_SOAK_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    with small_disk(tmp_path / "fs", "32m") as fs:
        soak = Soak(tmp_path, fs, rng)
        soak.daemon.start()
        try:
            until = time.monotonic() + SOAK_S
            while time.monotonic() < until:
                action = rng.choices(
                    [
                        soak.submit,
                        soak.kill_owner,
                        soak.kill_host,
                        soak.kill_supervisor,
                        soak.fill_or_free,
                        soak.crash_while_full,
                    ],
                    weights=[10, 1, 1, 2, 1, 2],
                )[0]
                action()
                time.sleep(rng.uniform(0.05, 0.4))
                if not soak.up() and rng.random() < 0.5:
                    if soak.filler is not None:
                        soak.fill_or_free()
                    soak.start_owner()
            if soak.filler is not None:
                soak.fill_or_free()
            soak.start_owner()
            try:
                ended = wait_for(lambda: _all_ended(soak), 180, "every task to end")
            except AssertionError:
                raise AssertionError(
                    f"seed {seed}: not ended: {soak.unfinished} (attacks: {soak.log})"
                ) from None
        finally:
            soak.daemon.kill()
    problems = _judge(soak, ended)
    assert not problems, f"seed {seed}: " + "; ".join(problems) + f" (attacks: {soak.log})"
    assert ended, "the soak submitted nothing"


def _all_ended(soak: Soak) -> dict[int, TaskView] | None:
    try:
        tasks = {int(t.id): t for t in soak.daemon.ask(rq.Queue(all=True)).tasks}
    except ipc.IpcError:
        return None
    if all(t.state in FINISHED for t in tasks.values()) and set(soak.retries) <= set(tasks):
        return tasks
    soak.unfinished = [f"#{t.id} {t.state}: {t.reason}" for t in tasks.values() if t.state not in FINISHED]
    return None


def _judge(soak: Soak, tasks: dict[int, TaskView]) -> list[str]:
    problems = []
    for task_id, retries in sorted(soak.retries.items()):
        task = tasks.get(task_id)
        if task is None:
            problems.append(f"#{task_id} lost from the queue")
            continue
        state, code = task.state, task.exit_code
        lines = _ledger(soak.ledger, task_id)
        starts = [line for line in lines if line[0] == "start"]
        ends = {line[1]: int(line[2]) for line in lines if line[0] == "end"}
        if len(starts) > 1 + retries:
            problems.append(f"#{task_id} ran {len(starts)} times with {retries} retries")
        for earlier in starts[:-1]:
            if ends.get(earlier[1]) == 0 and task_id not in soak.sup_killed:
                problems.append(f"#{task_id} ran again after a run that ended well")
        last_end = ends.get(starts[-1][1]) if starts else None
        if state == "succeeded" and last_end != 0:
            problems.append(f"#{task_id} recorded succeeded, its last run ended with {last_end}")
        if state == "failed" and code is not None and last_end != code:
            problems.append(f"#{task_id} recorded exit {code}, its last run ended with {last_end}")
        if state == "failed" and code is None and last_end == 0 and task_id not in soak.sup_killed:
            problems.append(f"#{task_id} recorded failed (no exit code), its last run ended well")
    return problems
