"""A job's end is never lost and a job never runs twice because the disk was full when it ended (#32
item 1), on a real small tmpfs (root only) with a real daemon killed for real.

The owner that learns a job's end while nothing can be written keeps its record in memory; the
supervisor's run and exit files beside the log (the exit written over room reserved before the job
started) stay until that record is on the disk. So an owner killed or stopped meanwhile leaves them to
the next, which records the true end from them: "succeeded", never "interrupted" and run again. Also:
a daemon started on a full disk says so in one line; a job whose output the full disk refused says so
in its reason and, once there is room, in its log's last line.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from small_disk import PY, Daemon, fill, pad_to_page, small_disk
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskPatch

FINISHED = ("succeeded", "failed", "cancelled")


def _job(ledger: Path, go: Path, *, say: int = 0) -> list[str]:
    """A job that appends its start to ``ledger``, waits for ``go``, writes ``say`` bytes and exits 0."""
    code = (
        "import os, sys, time\n"
        f"with open({str(ledger)!r}, 'a') as f: f.write('ran\\n')\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        f"sys.stdout.write('x' * {say}); sys.stdout.flush()\n"
    )
    return [PY, "-c", code]


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_a_job_that_ends_on_a_full_disk_never_runs_twice(tmp_path: Path, how: str) -> None:
    ledger, go = tmp_path / "ledger", tmp_path / "go"  # outside the small file system
    with small_disk(tmp_path / "fs") as fs:
        daemon = Daemon(fs / "home", tmp_path / "daemon-stderr.txt").start()
        try:
            patch = TaskPatch(retries=1, backoff_s=0.0)
            (task,) = daemon.ask(rq.Run(argv=_job(ledger, go), name="once", overrides=patch)).tasks
            wait_for(lambda: ledger.exists(), 30, "the job to start")
            wait_for(lambda: daemon.ask(rq.Get(id=task.id)).task.state == "running", 30, "running")
            filler = fill(fs)
            pad_to_page(daemon.paths.state_dir / "daemon.log")
            go.write_text("")
            # The owner knows (in memory); nothing of it is on the disk.
            wait_for(lambda: daemon.ask(rq.Get(id=task.id)).task.state == "succeeded", 30, "the end")
            daemon.kill(signal.SIGKILL if how == "killed" else signal.SIGTERM)
            filler.unlink()
            daemon.start()
            ended = wait_for(
                lambda: (t := daemon.ask(rq.Get(id=task.id)).task).state in FINISHED and t, 30, "its end"
            )
            assert ended.state == "succeeded" and ended.exit_code == 0, ended
            assert ledger.read_text() == "ran\n"  # run once
            assert not list(daemon.paths.logs_dir.glob("task-*.run.json"))  # recorded: its files went
        finally:
            daemon.kill()
    out = (tmp_path / "daemon-stderr.txt").read_text()
    assert "Traceback" not in out, out


def test_output_lost_on_a_full_disk_is_said_in_the_reason_and_the_log(tmp_path: Path) -> None:
    ledger, go = tmp_path / "ledger", tmp_path / "go"
    with small_disk(tmp_path / "fs") as fs:
        daemon = Daemon(fs / "home", tmp_path / "daemon-stderr.txt").start()
        try:
            (task,) = daemon.ask(rq.Run(argv=_job(ledger, go, say=20000), name="talks")).tasks
            wait_for(lambda: daemon.ask(rq.Get(id=task.id)).task.state == "running", 30, "running")
            filler = fill(fs)
            log_file = daemon.paths.logs_dir / f"task-{task.id}.log"
            pad_to_page(log_file)
            pad_to_page(daemon.paths.state_dir / "daemon.log")
            go.write_text("")
            done = wait_for(
                lambda: (t := daemon.ask(rq.Get(id=task.id)).task).state in FINISHED and t, 30, "its end"
            )
            assert done.state == "succeeded"
            assert "20,000 bytes of output were lost: the disk was full" in render(done.reason), done.reason
            filler.unlink()
            wanted = "20,000 bytes of the job's output could not be written to this log (the disk was full)"
            wait_for(lambda: log_file.read_text().rstrip().endswith(wanted), 30, "the log's last line")
        finally:
            daemon.kill()


def test_a_daemon_started_on_a_full_disk_says_so_in_one_line(tmp_path: Path) -> None:
    with small_disk(tmp_path / "fs", "2m") as fs:
        (fs / "home").mkdir()
        fill(fs)
        done = subprocess.run(
            [PY, "-m", "gputray.gui.entry", "daemon", "--demo"],
            env={**os.environ, "GPUTRAY_HOME": str(fs / "home")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "no space left" in lines[0], done.stderr
        assert not [p for p in fs.rglob("*.tmp")]  # no half-written file left behind
