"""Waiting clients cost the owner no worker (#32 item 3), against a real `gputray daemon --demo`.

Hundreds of `gputray wait` requests are parked (no thread each): meanwhile `ping`, `queue` and a
submit are answered; clients that go away have their waits ended at once (the owner closes their
connections: its open files drop); when the task ends every waiting client that stayed gets its
answer, none lost. Before: 16 workers, each held by one wait for up to its whole timeout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from raw_waits import answers, close_all, send_wait
from small_disk import PY, Daemon
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="counts the owner's open files in /proc")

WAITERS = 400  # of which half go away


def _open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_waiting_clients_hold_no_worker_and_none_is_lost(tmp_path: Path) -> None:
    go = tmp_path / "go"
    daemon = Daemon(tmp_path / "home", tmp_path / "daemon.txt").start()
    assert daemon.proc is not None
    waiting = []
    try:
        job = [PY, "-c", f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"]
        task_id = int(daemon.ask(rq.Run(argv=job, name="long")).tasks[0].id)
        before = _open_files(daemon.proc.pid)
        waiting = [send_wait(daemon.paths, [task_id]) for _ in range(WAITERS)]
        wait_for(lambda: _open_files(daemon.proc.pid) >= before + WAITERS - 10, 60, "every wait to be taken")  # type: ignore[union-attr]

        with ipc.IpcClient(daemon.paths, timeout_s=30) as client:  # answered, not behind the waits
            assert client.ask(rq.Ping()).ready
            assert any(t.id == task_id for t in client.ask(rq.Queue()).tasks)
            assert client.ask(rq.Run(argv=[PY, "-c", "pass"], name="meanwhile")).tasks

        gone, staying = waiting[: WAITERS // 2], waiting[WAITERS // 2 :]
        close_all(gone)  # their waits end at once: the owner lets go of their connections
        wait_for(
            lambda: _open_files(daemon.proc.pid) <= before + len(staying) + 8,  # type: ignore[union-attr]
            30,
            "the owner to let go of the clients that went away",
        )
        go.write_text("")
        got = answers(staying, 30)
        assert len(got) == len(staying)
        assert all(a["ok"] and a["result"]["done"] for a in got), got[:3]
        assert all(a["result"]["tasks"][0]["state"] == "succeeded" for a in got)
    finally:
        go.write_text("")  # the job ends even when the test failed early: no process outlives it
        close_all(waiting)
        daemon.kill()
