"""``[logs] max_size`` caps a task's log, not each attempt: a real owner, a job that fails five times
writing 2 MB each time, and the log it leaves."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs.job_log import make_room
from gputray.scheduler.paths import Paths
from gputray.scheduler.tasks.records import TaskPatch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")
PY = sys.executable
MIB = 1 << 20


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    p = home_paths(tmp_path, monkeypatch)
    p.config_file.parent.mkdir(parents=True, exist_ok=True)
    p.config_file.write_text('[logs]\nmax_size = "1MiB"\n')
    return p


@pytest.fixture
def client(paths: Paths) -> Iterator[ipc.IpcClient]:
    with running_owner(paths), ipc.IpcClient(paths) as c:
        yield c


def test_five_attempts_leave_one_capped_log_with_the_last_attempt_whole_at_its_end(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    """Before: each attempt kept its own head and tail, so five attempts left a 1.5 MB log."""
    counter = tmp_path / "attempts"
    job = (
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\n"
        "print(f'attempt {n} begins')\n"
        "sys.stdout.write(('x' * 99 + '\\n') * 20_000)\n"  # 2 MB
        "print(f'attempt {n} ends')\n"
        "sys.exit(1)\n"
    )
    task = client.ask(
        rq.Run(argv=[PY, "-c", job], name="flaky", overrides=TaskPatch(retries=4, backoff_s=0.0))
    ).tasks[0]
    done = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "failed" and t, 120)
    assert done.attempts == 5 and counter.read_text() == "5"
    data = Path(str(done.log_path)).read_bytes()
    assert len(data) <= MIB, len(data)
    assert data.startswith(b"=== gputray task #") and b"attempt 1 begins\n" in data  # the first one's head
    assert b"of earlier attempts' output were dropped here" in data
    last = data[data.rindex(b"=== gputray task #") :]
    assert b"attempt 5, on " in last.splitlines()[0]  # its header
    assert b"attempt 5 begins\n" in last and b"attempt 5 ends\n" in last  # the last one's head and tail
    # a follower that was further on than the cut log goes on from its end as it is now
    beyond = client.ask(rq.Logs(id=task.id, offset=10 * MIB))
    assert beyond.offset == beyond.size == len(data) and beyond.text == ""


def test_a_log_within_its_room_is_left_as_it_is(tmp_path: Path) -> None:
    log = tmp_path / "task-1.log"
    log.write_bytes(b"small\n")
    assert make_room(str(log), MIB) == 0 and log.read_bytes() == b"small\n"
    assert make_room(str(tmp_path / "none.log"), MIB) == 0
