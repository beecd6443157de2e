"""The job supervisor with real processes: the exit status is written beside the log whoever is around
when the job ends, and a later owner adopts the job (still running, or ended meanwhile)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
from waiting import wait_for

from gputray.scheduler.jobs.job_files import JobFiles, read_exit, read_run, supervisor_alive
from gputray.scheduler.jobs.launcher import adopt

PY = sys.executable
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")

# A throwaway owner: launches one job and dies at once (os._exit: no cleanup, like a kill -9).
OWNER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from gputray.scheduler.jobs.launcher import launch
    argv, log, timeout, cancel = json.loads(sys.argv[1])
    job = launch(argv, env=dict(os.environ), log_path=Path(log), timeout_s=timeout, grace_s=0.5,
                 meta={"task_id": 1, "attempt": 1, "device": "cpu", "out": None})
    if cancel:
        job.cancel("cancelled")  # writes why, then starts the kill; the owner dies before the end
    print(job.pid, flush=True)
    os._exit(0)
    """
)


def job_waiting_for(go: Path, code: int) -> list[str]:
    return [
        PY,
        "-c",
        f"import os, sys, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\nsys.exit({code})",
    ]


def owner_launches_and_dies(
    tmp_path: Path, argv: list[str], *, timeout_s: float | None = None, cancel: bool = False
) -> tuple[int, JobFiles]:
    log = tmp_path / "logs" / "task-1.log"
    done = subprocess.run(
        [PY, "-c", OWNER, json.dumps([argv, str(log), timeout_s, cancel])],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout.split()[0]), JobFiles.beside(log)


class Ends:
    """Collects on_exit calls from the watcher thread."""

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.done = threading.Event()

    def __call__(self, job: object, code: int) -> None:
        self.codes.append(code)
        self.done.set()


def test_a_job_that_ends_with_no_owner_up_has_its_exit_written(tmp_path: Path) -> None:
    go = tmp_path / "go"
    pid, files = owner_launches_and_dies(tmp_path, job_waiting_for(go, 7))
    run = read_run(files)
    assert run is not None and run.pid == pid and run.attempt == 1 and run.device == "cpu"
    assert psutil.pid_exists(pid) and supervisor_alive(files)  # the owner is gone; the job runs on
    go.touch()
    end = wait_for(lambda: read_exit(files, pid), what="the supervisor to write the exit")
    assert end.returncode == 7 and not end.timed_out
    wait_for(lambda: not supervisor_alive(files), what="the supervisor to end")
    ends = Ends()
    job = adopt(run, on_exit=ends)  # a later owner: the exit is recorded at once, from the file
    assert ends.done.wait(30) and ends.codes == [7] and job.kill_reason is None
    assert job.ended_at == end.ended_at


def test_a_job_still_running_is_adopted_and_its_real_exit_reported(tmp_path: Path) -> None:
    go = tmp_path / "go"
    pid, files = owner_launches_and_dies(tmp_path, job_waiting_for(go, 0))
    run = read_run(files)
    assert run is not None and run.pid == pid
    ends = Ends()
    job = adopt(run, on_exit=ends)
    assert not ends.done.wait(0.5) and job.running  # still running: watched, not judged
    go.touch()
    assert ends.done.wait(30) and ends.codes == [0]


def test_the_timeout_is_enforced_with_no_owner_up(tmp_path: Path) -> None:
    pid, files = owner_launches_and_dies(tmp_path, [PY, "-c", "import time; time.sleep(120)"], timeout_s=0.5)
    end = wait_for(lambda: read_exit(files, pid), what="the supervisor to stop the job")
    assert end.timed_out and end.returncode < 0
    run = read_run(files)
    assert run is not None
    ends = Ends()
    job = adopt(run, on_exit=ends)
    assert ends.done.wait(30) and job.kill_reason == "timeout"


def test_a_cancel_whose_owner_died_is_still_a_cancel(tmp_path: Path) -> None:
    pid, files = owner_launches_and_dies(tmp_path, [PY, "-c", "import time; time.sleep(120)"], cancel=True)
    end = wait_for(lambda: read_exit(files, pid), what="the job to be stopped")
    run = read_run(files)
    assert run is not None and end.returncode < 0
    ends = Ends()
    job = adopt(run, on_exit=ends)
    assert ends.done.wait(30) and job.kill_reason == "cancelled"  # not a crash to retry


def test_a_killed_supervisor_leaves_a_job_that_adoption_stops_and_says_so(tmp_path: Path) -> None:
    pid, files = owner_launches_and_dies(tmp_path, [PY, "-c", "import time; time.sleep(120)"])
    run = read_run(files)
    assert run is not None
    os.kill(run.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: not supervisor_alive(files), what="the supervisor to die")
    ends = Ends()
    job = adopt(run, on_exit=ends)
    assert ends.done.wait(30)
    assert job.kill_reason == "orphaned" and job.stopped_leftover
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)


def test_an_orphan_that_already_ended_is_not_said_to_be_stopped(tmp_path: Path) -> None:
    go = tmp_path / "go"
    pid, files = owner_launches_and_dies(tmp_path, job_waiting_for(go, 0))
    run = read_run(files)
    assert run is not None
    os.kill(run.supervisor_pid, signal.SIGKILL)  # no exit file will come
    go.touch()
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    ends = Ends()
    job = adopt(run, on_exit=ends)
    assert ends.done.wait(30) and job.kill_reason == "orphaned" and not job.stopped_leftover


def test_bytes_that_are_not_utf8_reach_the_job_unchanged(tmp_path: Path) -> None:
    """argv and environment values with surrogate escapes (undecodable bytes) end as the same bytes."""
    from gputray.scheduler.jobs.launcher import launch

    shows = "import os, sys; out = sys.stdout.buffer; out.write(os.fsencode(sys.argv[1]) + b'|')\n"
    shows += "out.write(os.environb[b'ODD'] + b'\\n')"
    odd = os.fsdecode(b"caf\xe9-\xff")
    ends = Ends()
    job = launch(
        [PY, "-c", shows, odd],
        env={"PATH": os.environ.get("PATH", ""), "ODD": odd},
        log_path=tmp_path / "logs" / "task-1.log",
        on_exit=ends,
    )
    assert job.wait(30) == 0
    assert (tmp_path / "logs" / "task-1.log").read_bytes().endswith(b"caf\xe9-\xff|caf\xe9-\xff\n")


def test_the_supervisor_loads_win_job_beside_it_with_the_standard_library_alone() -> None:
    """On Windows the supervisor (``python -I -S``, nothing importable but the standard library) loads
    ``win_job.py`` by path to put the job in a job object; a gputray import there would silently cost
    Windows its whole-tree kill. Loaded the same way here, off Windows it names the object and makes none."""
    from gputray.scheduler.jobs import supervisor

    here = Path(supervisor.__file__).with_name("win_job.py")
    code = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('w', {str(here)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(m.job_name(42), m.contain(object()), m.terminate_job(42))"
    )
    argv = [sys.executable, "-I", "-S", "-c", code]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Local\\gputray-job-42", "None", "False"]
