"""Crash test: SIGKILL the owner (`gputray daemon`) at random moments while jobs run, start it again,
and at the end compare, per task, what the queue says with what each job itself wrote.

Each job appends ``start <time>`` to a file of its own when it starts and ``exit <code> <time>`` just
before it exits (synced), so its real history survives any kill. Per task this checks:

- lost: a submit that was acknowledged and is not in the queue at the end (or is there twice);
- stuck: not finished when the last owner has run the queue empty;
- misreported: the run count (``attempts``) differs from the job's starts, or the final state and exit
  code differ from the job's last run, or a job that completed was run again. Each misreport is also
  classed by cause: *ended while no owner was up* (the job's exit landed between a kill, or just
  before it, and the next owner's start: nobody was there to record it), *a start counted that never
  ran* (the owner was killed between marking a task running and starting its process) or *other*
  (an owner that was up recorded something wrong).

Usage: python bench/crash_kill.py [--jobs 80] [--kills 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.replies import Tasks, TaskView

PY = sys.executable
FINISHED = {"succeeded", "failed", "cancelled"}
NO_OWNER = "ended while no owner was up"
NEVER_RAN = "a start counted that never ran"
OTHER = "other"
UNRECORDED_BEFORE_KILL_S = 0.5  # an exit this soon before a kill may not have been written yet

JOB = textwrap.dedent(
    """
    import os, sys, time
    marks, name, code, sleep_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

    def note(line):
        fd = os.open(os.path.join(marks, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, (line + "\\n").encode())
        os.fsync(fd)
        os.close(fd)

    note(f"start {time.time()!r}")
    time.sleep(sleep_s)
    note(f"exit {code} {time.time()!r}")
    sys.exit(code)
    """
)


@dataclass
class Run:
    started_at: float
    exit_code: int | None = None  # None: it never reached its end (killed)
    ended_at: float | None = None


@dataclass
class CrashReport:
    crashes: int = 0
    submitted: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    misreported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (cause, what)
    runs: int = 0
    rerun_after_completion: int = 0
    wall_s: float = 0.0

    def by_cause(self) -> Counter[str]:
        return Counter(cause for cause, _what in self.misreported.values())

    def summary(self) -> str:
        causes = ", ".join(f"{n} {cause}" for cause, n in sorted(self.by_cause().items())) or "none"
        return (
            f"{self.crashes} crashes (SIGKILL of the owner) survived; "
            f"{self.acknowledged} of {self.submitted} submits acknowledged; "
            f"{len(self.lost)} lost, {len(self.duplicated)} stored twice, "
            f"{len(self.stuck)} stuck; {len(self.misreported)} misreported ({causes}); {self.runs} job runs, "
            f"{self.rerun_after_completion} of them after the task had completed; {self.wall_s:.0f} s"
        )


class Owner:
    """`gputray daemon --demo` on a fixed GPUTRAY_HOME, started again and again."""

    def __init__(self, home: Path, stderr: Path) -> None:
        self.home = home
        self.paths = Paths(home / "config", home / "data", home / "state", home / "run")
        self.env = {**os.environ, "GPUTRAY_HOME": str(home)}
        self.stderr = stderr
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 90.0) -> float:
        """Start and wait until it answers; the time it became ready."""
        with self.stderr.open("a") as err:
            self.proc = subprocess.Popen(
                [PY, "-m", "gputray.gui.entry", "daemon", "--demo", "--log-level", "WARNING"],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the daemon exited with {self.proc.returncode}: {self.stderr.read_text()[-2000:]}"
                )
            with contextlib.suppress(ipc.IpcError):
                if ipc.ask(self.paths, rq.Ping()).ready:
                    return time.time()
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not answer")
            time.sleep(0.05)

    def kill(self) -> float:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)  # the daemon only: jobs run in sessions of their own
        self.proc.wait()
        return time.time()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _job_args(k: int, rng: random.Random) -> tuple[int, int, float]:
    code = 3 if k % 7 == 0 else 0
    retries = 2 if k % 3 == 0 else 0
    return code, retries, round(rng.uniform(0.2, 1.5), 2)


def run_crash_test(
    workdir: Path, *, jobs: int = 80, kills: int = 20, seed: int = 1, say: Any = None
) -> CrashReport:
    rng = random.Random(seed)
    marks = workdir / "marks"
    marks.mkdir(parents=True)
    script = workdir / "job.py"
    script.write_text(JOB)
    owner = Owner(workdir / "home", workdir / "daemon-stderr.txt")
    report = CrashReport()
    acknowledged: dict[str, int] = {}
    down: list[tuple[float, float]] = []  # (killed at, next owner ready at)
    submit_cycles = max(1, (kills * 3) // 4)
    per_cycle = -(-jobs // submit_cycles)
    next_job = 1
    started = time.monotonic()

    def submit(batch: list[int]) -> None:
        try:
            with ipc.IpcClient(owner.paths, timeout_s=30) as client:
                for k in batch:
                    code, retries, sleep_s = _job_args(k, random.Random(seed * 1000 + k))
                    name = f"job-{k}"
                    overrides = {
                        "device_prefs": ["5060ti", "780m", "cpu"],
                        "on_busy": "redirect",
                        "retries": retries,
                        "backoff_s": 0,
                    }
                    argv = [PY, str(script), str(marks), name, str(code), str(sleep_s)]
                    reply = client.ask(rq.Run(argv=argv, name=name, overrides=overrides))
                    acknowledged[name] = int(reply.tasks[0].id)
        except ipc.IpcError:
            pass  # the owner was killed mid-submit: what was not acknowledged may or may not be stored

    for cycle in range(kills):
        ready = owner.start()
        if down:
            down[-1] = (down[-1][0], ready)
        batch = (
            list(range(next_job, min(jobs, next_job + per_cycle - 1) + 1)) if cycle < submit_cycles else []
        )
        next_job += len(batch)
        report.submitted += len(batch)
        sender = threading.Thread(target=submit, args=(batch,), daemon=True)
        sender.start()
        time.sleep(rng.uniform(0.3, 2.5))
        down.append((owner.kill(), float("inf")))
        sender.join(timeout=30)
        report.crashes += 1
        time.sleep(rng.uniform(0.0, 1.0))  # jobs that end now have nobody to tell
        if say:
            say(f"crash {cycle + 1}/{kills}: {len(acknowledged)} acknowledged so far")
    if next_job <= jobs:  # the rest, to an owner that stays
        ready = owner.start()
        down[-1] = (down[-1][0], ready)
        rest = list(range(next_job, jobs + 1))
        report.submitted += len(rest)
        submit(rest)
    else:
        ready = owner.start()
        down[-1] = (down[-1][0], ready)
    try:
        tasks = _drain(owner)
    finally:
        owner.stop()
    report.acknowledged = len(acknowledged)
    report.wall_s = time.monotonic() - started
    _judge(report, acknowledged, tasks, marks, down)
    return report


def _drain(owner: Owner, timeout_s: float = 300.0) -> Tasks:
    deadline = time.monotonic() + timeout_s
    with ipc.IpcClient(owner.paths, timeout_s=30) as client:
        while True:
            tasks: Tasks = client.ask(rq.Queue(all=True)).tasks
            if all(t.state in FINISHED for t in tasks) or time.monotonic() > deadline:
                return tasks
            time.sleep(0.2)


def _runs(path: Path) -> list[Run]:
    runs: list[Run] = []
    if not path.exists():
        return runs
    for line in path.read_text().splitlines():
        word, *rest = line.split()
        if word == "start":
            runs.append(Run(float(rest[0])))
        elif word == "exit" and runs:
            runs[-1].exit_code, runs[-1].ended_at = int(rest[0]), float(rest[1])
    return runs


def _judge(
    report: CrashReport,
    acknowledged: dict[str, int],
    tasks: Tasks,
    marks: Path,
    down: list[tuple[float, float]],
) -> None:
    by_name: dict[str, list[TaskView]] = {}
    for t in tasks:
        by_name.setdefault(t.name, []).append(t)

    def unobserved(run: Run) -> bool:
        return run.ended_at is not None and any(
            a - UNRECORDED_BEFORE_KILL_S <= run.ended_at <= b for a, b in down
        )

    for name in acknowledged:
        found = by_name.get(name, [])
        if not found:
            report.lost.append(name)
            continue
        if len(found) > 1:
            report.duplicated.append(name)
        rec = found[0]
        runs = _runs(marks / name)
        report.runs += len(runs)
        if rec.state not in FINISHED:
            report.stuck.append(name)
            continue
        problems: list[tuple[str, str]] = []  # (cause, what)
        completed = [i for i, r in enumerate(runs) if r.exit_code == 0]
        if completed and completed[0] < len(runs) - 1:
            report.rerun_after_completion += len(runs) - 1 - completed[0]
            cause = NO_OWNER if unobserved(runs[completed[0]]) else OTHER
            problems.append((cause, "ran again after it had completed"))
        if rec.attempts != len(runs):
            if any(unobserved(r) for r in runs):
                cause = NO_OWNER  # a lost exit made it run again
            else:
                cause = NEVER_RAN if rec.attempts > len(runs) else OTHER
            problems.append((cause, f"the queue counts {rec.attempts} start(s), the job ran {len(runs)}"))
        if runs:
            last = runs[-1]
            if last.exit_code is not None:
                want = "succeeded" if last.exit_code == 0 else "failed"
                if rec.state != want or rec.exit_code != last.exit_code:
                    problems.append(
                        (
                            NO_OWNER if unobserved(last) else OTHER,
                            f"the queue says {rec.state} (exit {rec.exit_code}, {rec.reason!r}), "
                            f"the job exited {last.exit_code}",
                        )
                    )
            elif rec.state == "succeeded":
                problems.append((OTHER, "the queue says succeeded, the job's last run never ended"))
        elif rec.state == "succeeded":
            problems.append((OTHER, "the queue says succeeded, the job never ran"))
        if problems:
            causes = {c for c, _ in problems}
            cause = OTHER if OTHER in causes else NO_OWNER if NO_OWNER in causes else NEVER_RAN
            report.misreported[name] = (cause, "; ".join(w for _, w in problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=80)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gputray-crash-") as tmp:
        report = run_crash_test(
            Path(tmp), jobs=args.jobs, kills=args.kills, seed=args.seed, say=print if args.verbose else None
        )
    print(report.summary())
    for name, (cause, what) in sorted(report.misreported.items(), key=lambda kv: int(kv[0].split("-")[1])):
        print(f"  {name}: [{cause}] {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
