"""What a Prometheus scrape of ``/metrics`` costs the owner, with 2 GPUs and 1,000 tasks.

A fresh ``gputray daemon --demo`` (the simulated RTX 5060 Ti + Radeon 780M) with ``[metrics] listen`` on
a free loopback port and a queue of 1,000 tasks: 600 succeeded and 100 failed (written to the queue file
before it starts), 300 waiting for a start time ten hours away; then 24 short jobs run on the two GPUs
in 4 families, so the job histograms and counters have series too. Then ``SCRAPES`` plain HTTP GETs of
``/metrics``, one connection each, as Prometheus makes them, from this process; the owner's CPU time
(user + system, from /proc) over the scrapes, less its CPU over an idle stretch as long, divided by
the number of scrapes, is the cost.

Goal (issue 30): ≤ 1 ms of owner CPU per scrape.
Usage: python bench/metrics_scrape.py [SCRAPES]
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon

from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.store import NO_FSYNC_VAR, TaskStore
from gputray.scheduler.reasons.codes import ExitedWith
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskSpec

GOAL_MS = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(port: int) -> object:
    def fill(paths: Paths) -> None:
        paths.config_dir.mkdir(parents=True, exist_ok=True)
        (paths.config_dir / "config.toml").write_text(f'[metrics]\nlisten = "127.0.0.1:{port}"\n')
        os.environ[NO_FSYNC_VAR] = "1"
        try:
            store = TaskStore(paths.queue_db)
        finally:
            del os.environ[NO_FSYNC_VAR]
        now = time.time()
        specs = [TaskSpec(kind="command", name=f"done {i}", argv=("true", str(i))) for i in range(700)]
        records = store.add_many(specs, now=now - 3600)
        ran = life.Start(device="cpu", env=None, reason=None, attempts=1, started_at=now - 300, log_path="")
        store.apply_many([(r.id, ran) for r in records])  # each through the lifecycle: started, then ended
        ok = life.Succeed(end=life.JobEnd(exit_code=0, ended_at=now - 290))
        failed = life.RetryOrFail(
            why=ExitedWith(status=1), now=now - 290, end=life.JobEnd(exit_code=1, ended_at=now - 290)
        )
        store.apply_many([(r.id, ok if i < 600 else failed) for i, r in enumerate(records)])
        store.close()

    return fill


def scrape(port: int) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, response.status
        return body
    finally:
        conn.close()


def owner_cpu_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def main(scrapes: int = 2000) -> int:
    port = free_port()
    program = shutil.which("true") or "true"
    with BenchDaemon(prepare=prepare(port)) as d:  # type: ignore[arg-type]
        with d.client() as c:
            later = time.time() + 10 * 3600
            for i in range(300):
                c.ask(rq.Run(argv=[program, str(i)], name=f"later {i}", overrides={"start_at": later}))
            ids = []
            for i in range(24):
                family, device = f"family-{i % 4}", ("5060" if i % 2 else "780m")
                overrides = {"device_prefs": [device], "family": family}
                ids.append(
                    c.ask(rq.Run(argv=[program, "job"], name=f"job {i}", overrides=overrides)).tasks[0].id
                )
            while not c.ask(rq.WaitFor(ids=ids, timeout_s=60)).done:
                pass
        time.sleep(1.5)  # the passes over the submits end
        body = scrape(port)
        series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        proc = psutil.Process(d.proc.pid)
        t0, cpu0 = time.perf_counter(), owner_cpu_s(proc)
        for _ in range(scrapes):
            scrape(port)
        wall_s, busy_cpu_s = time.perf_counter() - t0, owner_cpu_s(proc) - cpu0
        cpu1 = owner_cpu_s(proc)
        time.sleep(wall_s)
        idle_cpu_s = owner_cpu_s(proc) - cpu1
    per_scrape_ms = (busy_cpu_s - idle_cpu_s) / scrapes * 1000
    verdict = "met" if per_scrape_ms <= GOAL_MS else "NOT met"
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} CPUs)")
    print(
        f"/metrics with 2 GPUs and 1,000 tasks ({series} series, {len(body):,} bytes): owner CPU "
        f"{per_scrape_ms:.2f} ms per scrape (goal ≤ {GOAL_MS:g} ms): {verdict}; "
        f"{scrapes / wall_s:.0f} scrapes/s from one client; idle owner {idle_cpu_s / wall_s * 100:.1f} % CPU"
    )
    return 0 if per_scrape_ms <= GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main(*(int(a) for a in sys.argv[1:])))
