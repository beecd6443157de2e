"""Backlog: does a queue full of tasks waiting for a time slow down the tasks that can run now?

Two daemons, one after the other, each fresh (`gputray daemon --demo`):

* **empty**: nothing queued;
* **backlog**: the queue file already holds ``N`` finished tasks when the daemon starts, and ``N``
  tasks are then submitted over the socket with ``start_at`` ten hours away (``--at +10h``).

Every task carries a caller environment of about 4 KiB (as ``gputray run`` sends the shell's). Then,
on each daemon, ``SAMPLES`` short jobs (``true`` on the CPU) are submitted one after the other, each
once the one before has ended: submit → running is the owner's own ``started_at - submitted_at``. A
burst of ``BURST`` jobs gives the throughput (jobs/s from the first submit to the last end). The
daemon's RSS is read at the end.

Goals (issue 22): with N = 10,000 waiting, submit → running p50 within 1.5× of the empty queue's;
owner RSS with 10,000 finished + 10,000 waiting ≤ 150 MiB.
Usage: python bench/backlog.py [N] [SAMPLES]
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon, percentile

from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.store import NO_FSYNC_VAR, TaskStore
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskSpec

BURST = 60
ENV_BYTES = 4096


def caller_env() -> dict[str, str]:
    """The bench's own environment padded to about 4 KiB, as a shell's often is."""
    env = {k: v for k, v in os.environ.items() if "\x00" not in k + v}
    size = sum(len(k) + len(v) + 2 for k, v in env.items())
    env["GPUTRAY_BENCH_PAD"] = "x" * max(0, ENV_BYTES - size)
    return env


def fill_finished(n: int, env: dict[str, str]) -> Callable[[Paths], None]:
    """``n`` finished tasks in the queue file, written before the daemon starts (running 10,000 jobs
    would take the bench half an hour; the owner reads them back as it would after a busy week)."""

    def prepare(paths: Paths) -> None:
        if n == 0:
            return
        os.environ[NO_FSYNC_VAR] = "1"
        try:
            store = TaskStore(paths.queue_db)
        finally:
            del os.environ[NO_FSYNC_VAR]
        program = shutil.which("true") or "true"
        now = time.time()
        specs = [
            TaskSpec(kind="command", name=f"done {i}", argv=(program, str(i)), base_env=env) for i in range(n)
        ]
        records = store.add_many(specs, now=now - 3600)
        ran = life.Start(device="cpu", env=None, reason=None, attempts=1, started_at=now - 300, log_path="")
        store.apply_many([(r.id, ran) for r in records])  # each through the lifecycle: started, then ended
        ended = life.Succeed(end=life.JobEnd(exit_code=0, ended_at=now - 290))
        store.apply_many([(r.id, ended) for r in records])
        store.close()

    return prepare


def measure(d: BenchDaemon, env: dict[str, str], samples: int) -> tuple[list[float], float]:
    """Submit → running of ``samples`` jobs one after the other (ms), and a burst's jobs/s."""
    program = shutil.which("true") or sys.executable
    cpu = {"device_prefs": ["cpu"]}
    latencies = []
    with d.client() as c:
        for i in range(samples):
            rec = c.ask(rq.Run(argv=[program, str(i)], name=f"probe {i}", overrides=cpu, caller_env=env))
            task_id = rec.tasks[0].id
            while True:
                done = c.ask(rq.WaitFor(ids=[task_id], timeout_s=30))
                if done.done:
                    break
            t = done.tasks[0]
            latencies.append((t.started_at - t.submitted_at) * 1000)
        t0 = time.perf_counter()
        ids = []
        for i in range(BURST):
            reply = c.ask(rq.Run(argv=[program, "b"], name=f"burst {i}", overrides=cpu, caller_env=env))
            ids.append(reply.tasks[0].id)
        while not c.ask(rq.WaitFor(ids=ids, timeout_s=60)).done:
            pass
        rate = BURST / (time.perf_counter() - t0)
    return latencies, rate


def run(n: int, samples: int, env: dict[str, str]) -> tuple[list[float], float, float, float]:
    program = shutil.which("true") or sys.executable
    with BenchDaemon(prepare=fill_finished(n, env)) as d:
        with d.client() as c:
            start_at = time.time() + 10 * 3600
            t0 = time.perf_counter()
            for i in range(n):
                c.ask(
                    rq.Run(
                        argv=[program, str(i)],
                        name=f"later {i}",
                        overrides={"start_at": start_at, "device_prefs": ["cpu"]},
                        caller_env=env,
                    )
                )
            submit_s = time.perf_counter() - t0
        time.sleep(2.0)  # the passes over the burst of submits end
        latencies, rate = measure(d, env, samples)
        rss = psutil.Process(d.proc.pid).memory_info().rss / 2**20
    return latencies, rate, rss, submit_s


def main(n: int = 10_000, samples: int = 40) -> int:
    env = caller_env()
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} CPUs)")
    empty, empty_rate, empty_rss, _ = run(0, samples, env)
    full, full_rate, full_rss, submit_s = run(n, samples, env)
    e50, f50 = percentile(empty, 0.5), percentile(full, 0.5)
    print(
        f"empty queue: submit → running p50 {e50:.1f} ms, p90 {percentile(empty, 0.9):.1f} ms; "
        f"{empty_rate:.1f} jobs/s; owner RSS {empty_rss:.0f} MiB"
    )
    print(
        f"{n:,} finished + {n:,} waiting on --at +10h (submitted in {submit_s:.1f} s): submit → running "
        f"p50 {f50:.1f} ms, p90 {percentile(full, 0.9):.1f} ms; {full_rate:.1f} jobs/s"
    )
    print(f"submit → running p50 with the backlog / empty: {f50 / e50:.2f}× (goal ≤ 1.5×)")
    print(f"owner RSS with {n:,} finished + {n:,} waiting: {full_rss:.0f} MiB (goal ≤ 150 MiB)")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, int(sys.argv[2]) if len(sys.argv) > 2 else 40)
    )
