"""How fast the owner answers while 1,000 `gputray wait` clients wait on it (#32 item 3).

A real `gputray daemon --demo`; one long task; 1,000 raw connections each waiting for it (a `wait`
request sent, its answer unread); then `ping`, `queue` and a submit (`run`), each asked 100 times in a
row on one connection, timed from send to answer. Goal: each answered within 100 ms (p99), as with no
one waiting. Then the 1,000 clients go away, and the time until the owner has let go of them all.

Run: ``python bench/wait_clients.py [WAITERS]``.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon, percentile

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.ipc import FRAME_HEADER

ROUNDS = 100
GOAL_MS = 100.0


def send_wait(daemon: BenchDaemon, task_id: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(ipc.socket_path(daemon.paths)))
    request = rq.WaitFor(ids=[task_id], timeout_s=60)
    payload = ipc.encode_payload({"op": request.op, "args": request, "v": rq.PROTOCOL_VERSION})
    sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)
    return sock


def timed(client: ipc.IpcClient, make: object) -> list[float]:
    out = []
    for _ in range(ROUNDS):
        request = make() if callable(make) else make
        started = time.perf_counter()
        client.ask(request)  # type: ignore[arg-type]
        out.append((time.perf_counter() - started) * 1000)
    return out


def line(label: str, values: list[float]) -> str:
    p99 = percentile(values, 0.99)
    return (
        f"{label}: p50 {percentile(values, 0.5):.1f} ms, p99 {p99:.1f} ms, max {max(values):.1f} ms "
        f"(goal p99 ≤ {GOAL_MS:.0f} ms){'' if p99 <= GOAL_MS else '  MISSED'}"
    )


def main() -> int:
    waiters = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with BenchDaemon() as daemon, daemon.client() as client:
        job = [sys.executable, "-c", "import time; time.sleep(600)"]
        task_id = client.ask(rq.Run(argv=job, name="long")).tasks[0].id
        run = rq.Run(argv=[sys.executable, "-c", "pass"], name="bench", overrides=None)
        quiet = {"ping": timed(client, rq.Ping()), "queue": timed(client, rq.Queue())}
        pid = daemon.proc.pid
        before = len(os.listdir(f"/proc/{pid}/fd"))
        socks = [send_wait(daemon, task_id) for _ in range(waiters)]
        while len(os.listdir(f"/proc/{pid}/fd")) < before + waiters - 10:  # every wait taken (parked)
            time.sleep(0.005)
        held_from = len(os.listdir(f"/proc/{pid}/fd"))
        busy = {
            "ping": timed(client, rq.Ping()),
            "queue": timed(client, rq.Queue()),
            "submit (run)": timed(client, run),
        }
        lost = sum(1 for s in socks if select.select([s], [], [], 0)[0])  # answered or closed early
        started = time.perf_counter()
        for sock in socks:
            sock.close()
        while len(os.listdir(f"/proc/{pid}/fd")) > held_from - waiters + 8:
            time.sleep(0.005)
        let_go_ms = (time.perf_counter() - started) * 1000
        client.ask(rq.Cancel(ids=[task_id]))
    print(f"wait_clients: {waiters} clients waiting on one task, {ROUNDS} requests each, one connection")
    for label, values in quiet.items():
        print("  no one waiting, " + line(label, values))
    for label, values in busy.items():
        print(f"  {waiters} waiting, " + line(label, values))
    print(f"  waiting clients answered or cut off before the task ended: {lost} (goal 0)")
    print(f"  {waiters} clients gone → the owner has let go of them all: {let_go_ms:.0f} ms (no goal)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
