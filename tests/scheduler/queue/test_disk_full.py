"""A full disk and a read-only one, for real: a small tmpfs mounted under tmp_path (root only).

A job that ends while the disk is full is recorded when space returns (never left ``running``, never
"interrupted" after a restart); submits meanwhile are refused in words; the daemon's own output stays
free of tracebacks and "Logging error" blocks (one line says its log is off until space returns).
A read-only data folder is a clear message at start.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from small_disk import Daemon, fill, mount_tmpfs, pad_to_page, small_disk
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.log_setup import PrivateRotatingFileHandler
from gputray.scheduler.queue.saved_queue import read_saved_task
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "fs", "8m") as mnt:
        yield mnt


def test_a_job_that_ends_on_a_full_disk_is_recorded_when_space_returns(
    small_fs: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"  # outside the small file system
    daemon = Daemon(small_fs / "home", tmp_path / "daemon-stderr.txt").start()
    data = daemon.paths.data_dir
    try:
        wait_job = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        (task,) = daemon.ask(rq.Run(argv=[PY, "-c", wait_job], name="ends on a full disk")).tasks  # type: ignore[misc]
        task_id = int(task.id)

        def running_pid() -> int | None:
            got = daemon.ask(rq.Get(id=task_id))
            return got.pid if got.task.state == "running" else None  # type: ignore[index,return-value]

        pid = wait_for(running_pid, 30, "the job to run")
        filler = fill(small_fs)
        pad_to_page(daemon.paths.state_dir / "daemon.log")  # its next line needs a page the disk lacks
        go.write_text("")
        wait_for(lambda: not _alive(pid), 30, "the job to end")

        # The owner knows at once; the disk does not yet (nothing can be written there).
        wait_for(lambda: daemon.ask(rq.Get(id=task_id)).task.state == "succeeded", 30, "the exit")  # type: ignore[index]
        assert read_saved_task(daemon.paths.queue_db, task_id).state == "running"
        with pytest.raises(ipc.RemoteError) as refused:
            daemon.ask(rq.Run(argv=[PY, "-c", "pass"], name="refused"))
        assert f"no space left: 0 KiB free in {data}" in refused.value.message

        filler.unlink()
        wait_for(
            lambda: read_saved_task(daemon.paths.queue_db, task_id).state == "succeeded", 30, "the write"
        )
        daemon.kill()  # a crash after space returned: what the disk says is what counts
        daemon.start()
        after = daemon.ask(rq.Get(id=task_id)).task
        assert after.state == "succeeded" and after.exit_code == 0  # type: ignore[index]
        assert daemon.ask(rq.Run(argv=[PY, "-c", "pass"], name="room again")).tasks
    finally:
        daemon.kill()
    out = daemon.stderr_path.read_text()
    assert "Traceback" not in out and "Logging error" not in out, out
    assert out.count("logging to it is off until space returns") == 1, out
    assert "the disk has room again" in out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_log_on_a_full_disk_says_so_once_and_comes_back(small_fs: Path) -> None:
    clock = [1000.0]
    notice = io.StringIO()
    handler = PrivateRotatingFileHandler(
        small_fs / "gputray.log", max_bytes=2 << 20, backup_count=3, clock=lambda: clock[0], notice=notice
    )
    logger = logging.getLogger("gputray.test-full-disk")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        logger.warning("before")
        filler = fill(small_fs)
        pad_to_page(small_fs / "gputray.log")
        for i in range(30):
            logger.warning("message %d while full", i)
        assert handler.is_off
        lines = notice.getvalue().splitlines()
        assert len(lines) == 1 and "logging to it is off until space returns" in lines[0]
        filler.unlink()
        clock[0] += 10
        logger.warning("after")
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = (small_fs / "gputray.log").read_text()
    assert "before" in text and "after" in text and "while full" not in text
    assert "the log works again; 30 message(s) could not be written meanwhile" in text
    assert (small_fs / "gputray.log").stat().st_mode & 0o777 == 0o600


def test_a_read_only_data_folder_is_a_clear_message_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / "data"
    mount_tmpfs(data, "4m")
    try:
        store = TaskStore(data / "queue.sqlite3")
        store.add(TaskSpec(kind="command", name="saved before", argv=("true",)))
        store.close()
        (data / "logs").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(data)], check=True)

        started = time.monotonic()
        daemon = gputray("daemon", "--demo", home=home)
        assert daemon.returncode == 1, daemon.stderr
        assert "Traceback" not in daemon.stderr, daemon.stderr
        assert f"the data folder {data} is on a read-only file system" in daemon.stderr
        assert time.monotonic() - started < 60

        offline = gputray("queue", home=home)  # the saved queue is still shown
        assert offline.returncode == 0, offline.stderr
        assert "saved before" in offline.stdout
    finally:
        subprocess.run(["umount", "-l", str(data)], check=False)
