"""Queue scale: 10,000 tasks submitted over the socket, `queue --json` of all of them, daemon RSS;
then acknowledged submits from 8 concurrent clients, durable (the default) vs not.

The queue is paused first so the tasks stay queued (nothing runs). Submissions go one request per
task over one connection, as a script looping on the socket would.

Durable: each submit's reply waits until SQLite has synced the WAL (``synchronous=FULL``); submits
that arrive together share one commit. Not durable: ``GPUTRAY_UNSAFE_NO_FSYNC=1`` (the old
``synchronous=NORMAL``, safe against a crash of gputray but not of the machine). Both from this run,
each with a fresh daemon, 8 client processes started together.

Goals (issue 5): ≥ 1,000 submissions/s; `gputray queue --all --json` of 10,000 ≤ 1 s.
Goal (issue 10): ≥ 1,000 acknowledged (durable) submits/s from 8 concurrent clients.
Usage: python bench/queue_scale.py [N] [CONCURRENT_N]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.store import NO_FSYNC_VAR

CLIENTS = 8


def _client(paths: Paths, program: str, count: int, who: int, start: Any, out: Any) -> None:
    """One client process: wait for the others, then submit ``count`` tasks, one request each."""
    with ipc.IpcClient(paths, timeout_s=120) as c:
        c.ask(rq.Ping())
        start.wait()
        t0 = time.perf_counter()
        for i in range(count):
            c.ask(rq.Run(argv=[program, str(i)], name=f"c{who} {i}", overrides={"device_prefs": ["780m"]}))
        out.put((t0, time.perf_counter()))


def fdatasync_ms(folder: Path, rounds: int = 200) -> float:
    """What one sync of a 4 KiB append costs on this disk: the price of a durable commit."""
    path = folder / "sync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        t0 = time.perf_counter()
        for _ in range(rounds):
            os.write(fd, b"x" * 4096)
            (getattr(os, "fdatasync", None) or os.fsync)(fd)
        return (time.perf_counter() - t0) / rounds * 1000
    finally:
        os.close(fd)
        path.unlink()


def concurrent_rate(n: int, *, durable: bool, clients: int = CLIENTS) -> float:
    """Acknowledged submits per second from ``clients`` processes at once, against a fresh daemon."""
    program = shutil.which("true") or sys.executable
    extra = {} if durable else {NO_FSYNC_VAR: "1"}
    ctx = multiprocessing.get_context("spawn")
    with BenchDaemon(extra_env=extra) as d:
        ipc.ask(d.paths, rq.Pause(device=None))
        start, out = ctx.Barrier(clients), ctx.Queue()
        procs = [
            ctx.Process(target=_client, args=(d.paths, program, n // clients, k, start, out))
            for k in range(clients)
        ]
        for p in procs:
            p.start()
        spans = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        stored = len(ipc.ask(d.paths, rq.Queue(all=True)).tasks)
    assert stored == (n // clients) * clients, f"{stored} tasks stored"
    return stored / (max(e for _, e in spans) - min(s for s, _ in spans))


def main(n: int = 10_000, concurrent_n: int = 8_000) -> int:
    program = shutil.which("true") or sys.executable
    with BenchDaemon() as d, d.client() as c:
        rss_idle = psutil.Process(d.proc.pid).memory_info().rss
        c.ask(rq.Pause(device=None))
        t0 = time.perf_counter()
        for i in range(n):
            c.ask(rq.Run(argv=[program, str(i)], name=f"task {i}", overrides={"device_prefs": ["780m"]}))
        submit_s = time.perf_counter() - t0
        time.sleep(1.0)  # let the dispatcher's last pass over the burst finish
        t0 = time.perf_counter()
        tasks = c.ask(rq.Queue(all=True)).tasks
        ipc_first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        c.ask(rq.Queue(all=True))
        ipc_list_s = time.perf_counter() - t0
        # As a user runs it: an installed gputray has its bytecode compiled (pip does that). This
        # checkout may run with PYTHONDONTWRITEBYTECODE, so compile into a throw-away cache first.
        with tempfile.TemporaryDirectory(prefix="gputray-pyc-") as pyc:
            env = {k: v for k, v in d.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = pyc
            cmd = [sys.executable, "-m", "gputray.gui.entry", "queue", "--all", "--json"]
            subprocess.run(cmd, env=env, capture_output=True, check=False)  # writes the bytecode
            t0 = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            cli_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=False)
            bare_s = time.perf_counter() - t0
        listed = len(json.loads(out.stdout)["tasks"]) if out.returncode == 0 else -1
        rss = psutil.Process(d.proc.pid).memory_info().rss
    print(f"submitted {n} tasks over the socket in {submit_s:.2f} s: {n / submit_s:,.0f}/s (goal ≥ 1,000/s)")
    print(
        f"queue of all {len(tasks)} over the socket: {ipc_first_s * 1000:.0f} ms the first time, "
        f"{ipc_list_s * 1000:.0f} ms again"
    )
    print(
        f"`gputray queue --all --json` ({listed} tasks, new process included): {cli_s:.2f} s (goal ≤ 1 s); "
        f"a bare `python -c pass` takes {bare_s:.2f} s here"
    )
    print(f"daemon RSS: {rss_idle / 2**20:.0f} MiB idle → {rss / 2**20:.0f} MiB with {n} tasks")
    with tempfile.TemporaryDirectory(prefix="gputray-sync-") as probe:
        sync_ms = fdatasync_ms(Path(probe))
    durable = concurrent_rate(concurrent_n, durable=True)
    unsafe = concurrent_rate(concurrent_n, durable=False)
    print(
        f"{concurrent_n} submits from {CLIENTS} concurrent clients: {durable:,.0f}/s durable (WAL synced "
        f"before each reply, group commit; goal ≥ 1,000/s) vs {unsafe:,.0f}/s not durable "
        f"({NO_FSYNC_VAR}=1); one fdatasync of a 4 KiB append costs {sync_ms:.2f} ms on this disk"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
            int(sys.argv[2]) if len(sys.argv) > 2 else 8_000,
        )
    )
