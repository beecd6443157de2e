"""Queue scale: 10,000 tasks submitted over the socket, `queue --json` of all of them, daemon RSS.

The queue is paused first so the tasks stay queued (nothing runs). Submissions go one request per
task over one connection, as a script looping on the socket would.

Goals (issue 5): ≥ 1,000 submissions/s; `gputray queue --all --json` of 10,000 ≤ 1 s.
Usage: python bench/queue_scale.py [N]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon


def main(n: int = 10_000) -> int:
    program = shutil.which("true") or sys.executable
    with BenchDaemon() as d, d.client() as c:
        rss_idle = psutil.Process(d.proc.pid).memory_info().rss
        c.request("pause", device=None)
        t0 = time.perf_counter()
        for i in range(n):
            c.request("run", argv=[program, str(i)], name=f"task {i}", overrides={"device_prefs": ["780m"]})
        submit_s = time.perf_counter() - t0
        time.sleep(1.0)  # let the dispatcher's last pass over the burst finish
        t0 = time.perf_counter()
        tasks = c.request("queue", all=True)["tasks"]
        ipc_first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        c.request("queue", all=True)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
