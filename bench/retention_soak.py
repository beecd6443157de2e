"""Retention soak: a week of a queue running one job a second, on an accelerated (fake) clock.

Each simulated ten minutes, 600 tasks are queued (each with a 4 KiB caller environment, as ``gputray run``
sends) and end as succeeded, each with a 2 KiB log in the logs folder, all written into a real queue
file (a real ``TaskStore``) under a real ``QueueService``. The owner's ``Retention`` timer, with the
config's default ``[retention]`` limits (30 days, 1,000 tasks), runs whenever it is due on the fake
clock (every 10 min), as the dispatcher would run it. No processes are started: a week of real jobs
would take a week; what is measured is what stays on disk. The folder is on /dev/shm where there is
one (creating 600,000 files on this machine's disk takes longer than the bench should; the sizes are
the same).

Goal (issue 22): the queue file and the log folder stay bounded: day 7 within 1.1× of day 2.
Usage: python bench/retention_soak.py [DAYS] [--no-retention]  (the latter: as before retention existed)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from gputray.monitor.backends.simulated import SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.scenario import Scenario
from gputray.scheduler.config import RetentionSection
from gputray.scheduler.paths import app_paths
from gputray.scheduler.queue.retention import Retention
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.queue.store import NO_FSYNC_VAR, TaskStore
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskSpec

BATCH_S = 600  # simulated seconds per batch: one job each
LOG_BYTES = 2048


class FakeClock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def folder_bytes(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def main(days: int = 7, *, retain: bool = True) -> int:
    shm = Path("/dev/shm")
    home = Path(tempfile.mkdtemp(prefix="gputray-soak-", dir=shm if shm.is_dir() else None))
    os.environ["GPUTRAY_HOME"] = str(home)
    os.environ[NO_FSYNC_VAR] = "1"  # the sizes are the same synced or not; a week must fit in minutes
    paths = app_paths()
    clock = FakeClock()
    store = TaskStore(paths.queue_db, clock=clock)
    monitor = Monitor([SimulatedBackend(Scenario(()), clock=clock)], host=HostReader(), clock=clock)
    queue = QueueService(store, monitor, paths=paths, clock=clock)
    limits = RetentionSection() if retain else RetentionSection(keep_days=0, keep_tasks=0)
    retention = Retention(queue.edits, keep_days=limits.keep_days, keep_tasks=limits.keep_tasks, clock=clock)
    paths.logs_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if "\x00" not in k + v}
    env["PAD"] = "x" * max(0, 4096 - sum(len(k) + len(v) + 2 for k, v in env.items()))
    program = shutil.which("true") or "true"
    log_bytes = b"y" * (LOG_BYTES - 1) + b"\n"
    started = time.perf_counter()
    per_day: list[tuple[int, int, int, int]] = []
    jobs = 0
    print(f"{days} days at 1 job/s, limits keep_days={limits.keep_days:g}, keep_tasks={limits.keep_tasks}")
    for day in range(1, days + 1):
        for _batch in range(86_400 // BATCH_S):
            specs = [
                TaskSpec(kind="command", name=f"job {jobs + i}", argv=(program,), base_env=env)
                for i in range(BATCH_S)
            ]
            records = store.add_many(specs, now=clock.t)
            changes: list[tuple[int, life.Step]] = []
            ends: list[tuple[int, life.Step]] = []
            for i, rec in enumerate(records):
                log_path = paths.logs_dir / f"task-{rec.id}.log"
                fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, log_bytes)
                os.close(fd)
                end = clock.t + i + 1
                ran = life.Start(
                    device="cpu",
                    env=None,
                    reason=None,
                    attempts=1,
                    started_at=end - 0.5,
                    log_path=str(log_path),
                )
                changes.append((rec.id, ran))
                ends.append((rec.id, life.Succeed(end=life.JobEnd(exit_code=0, ended_at=end))))
            store.apply_many(changes)  # each through the lifecycle: started, then ended
            store.apply_many(ends)
            jobs += BATCH_S
            clock.t += BATCH_S
            due = retention.next_due_s()
            if due is not None and clock.t >= due:
                retention.run_due(clock.t)
        logs, log_files = folder_bytes(paths.logs_dir)
        tasks = len(store.list())
        per_day.append((db_bytes(paths.queue_db), logs, log_files, tasks))
        print(
            f"day {day}: {jobs:,} jobs run; queue file {per_day[-1][0] / 2**20:.1f} MiB, "
            f"logs {logs / 2**20:.1f} MiB in {log_files:,} files, {tasks:,} tasks kept "
            f"({time.perf_counter() - started:.0f} s so far)"
        )
    store.close()
    shutil.rmtree(home, ignore_errors=True)
    if days >= 2:
        db2, logs2 = per_day[1][0], per_day[1][1]
        db_last, logs_last = per_day[-1][0], per_day[-1][1]
        print(
            f"after {days} days ({jobs:,} jobs, {retention.removed:,} removed): queue file "
            f"{db_last / 2**20:.1f} MiB = {db_last / db2:.2f}× day 2, log folder {logs_last / 2**20:.1f} MiB "
            f"= {logs_last / logs2:.2f}× day 2 (goal: both ≤ 1.1× day 2, i.e. bounded)"
        )
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    raise SystemExit(main(int(args[0]) if args else 7, retain="--no-retention" not in sys.argv))
