"""Job logs that stay sane, through the real daemon, CLI and jobs: a cap that keeps the head and the
tail, ``logs`` that returns while the job writes, and a log the job replaced by a FIFO or a link."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq

PY = sys.executable
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, symbolic links to /dev/zero, yes(1)"),
]


def _config(home: Path, text: str) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text)


def _queued_id(out: subprocess.CompletedProcess[str]) -> int:
    assert out.returncode == 0, out.stderr
    found = re.match(r"#(\d+) ", out.stdout)
    assert found, out.stdout
    return int(found.group(1))


def _log(d: Daemon, task_id: int) -> Path:
    return d.paths.data_dir / "logs" / f"task-{task_id}.log"


def test_a_yes_job_keeps_its_head_and_tail_within_the_cap(daemons: Callable[..., Daemon], home: Path) -> None:
    """`yes` wrote 13 GB in 25 s: the log had no limit."""
    _config(home, '[logs]\nmax_size = "1MiB"\n')
    d = daemons()
    # The timeout keeps a log without a cap from filling the disk (~500 MB/s here).
    task_id = _queued_id(d.cli("run", "--device", "cpu", "--timeout", "5s", "--", "yes", "gputray"))
    log = _log(d, task_id)
    wait_for(lambda: log.exists() and b"near its cap of 1.0 MiB" in log.read_bytes(), 30, "the cap")
    d.cli("cancel", str(task_id))
    d.wait_state(task_id, {"cancelled", "failed"})  # failed: it timed out first
    data = log.read_bytes()
    assert len(data) <= 1 << 20  # the cap, the two lines that say what happened within it
    head, _, rest = data.partition(b"\n[gputray: this log is near its cap of 1.0 MiB ([logs] max_size)")
    assert head.startswith(b"=== gputray task #") and b"\ngputray\ngputray\n" in head
    assert len(head) == (1 << 20) - (128 << 10) - 1024  # the head: the cap less the tail and the notes
    dropped = re.search(
        rb"\n\[gputray: ([\d,]+) bytes \([\d.]+ [KMG]iB\) of output were dropped here; "
        rb"the last 128.0 KiB follow\]\n",
        rest,
    )
    assert dropped, rest[:300]
    tail = rest[dropped.end() :].partition(b"\ngputray: cancelled at ")[0]  # the cancel's own line after
    assert len(tail) == 128 << 10 and set(tail.split(b"\n")[1:-1]) == {b"gputray"}
    shown = d.cli("logs", str(task_id))
    assert shown.returncode == 0 and "of output were dropped here" in shown.stdout


def test_logs_prints_what_exists_and_returns_while_the_job_writes_faster_than_it_reads(
    daemons: Callable[..., Daemon], home: Path
) -> None:
    """`gputray logs ID` followed a job writing faster than it read, and never returned."""
    d = daemons()
    writer = (
        "import os, time\nline = b'x' * 1023 + b'\\n'\n"
        "while True:\n    os.write(1, line * 64)\n    time.sleep(0.005)\n"  # ~10 MB/s
    )
    task_id = _queued_id(d.cli("run", "--device", "cpu", "--", PY, "-c", writer))
    log = _log(d, task_id)
    wait_for(lambda: log.exists() and log.stat().st_size > 1 << 20, 30, "a first MiB of log")
    reader = subprocess.Popen(
        [PY, "-m", "gputray.gui.entry", "logs", str(task_id)],
        env=d.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None
    printed = 0
    deadline = time.monotonic() + 60
    try:
        while chunk := reader.stdout.read1(16 << 10):  # a slow reader: ~3 MB/s, slower than the job
            printed += len(chunk)
            time.sleep(0.005)
            assert time.monotonic() < deadline, f"logs still printing after {printed:,} bytes"
        assert reader.wait(10) == 0, reader.stderr.read() if reader.stderr else ""
    finally:
        reader.kill()
        reader.wait()
    assert d.task(task_id).state == "running"  # the job went on writing; logs returned all the same
    assert 1 << 20 < printed < log.stat().st_size
    d.cli("cancel", str(task_id))


@pytest.mark.parametrize(
    ("replace", "said"),
    [
        ("os.mkfifo(log)", "is a FIFO, not a regular file: not read"),
        ("os.symlink('/dev/zero', log)", "is a symbolic link: not followed"),
    ],
)
def test_a_log_the_job_replaced_is_refused_in_words_not_waited_on_or_followed(
    daemons: Callable[..., Daemon], home: Path, replace: str, said: str
) -> None:
    """A FIFO held one owner thread per `logs` request for ever (and delayed the owner's stop 15 s
    each); a link to /dev/zero streamed without end."""
    d = daemons()
    job = (
        "import os, sys, time\n"
        "log = os.path.join(os.environ['GPUTRAY_HOME'], 'data', 'logs', 'task-%s.log')\n"
        "log %= os.environ['GPUTRAY_TASK_ID']\n"
        f"os.unlink(log); {replace}\n"
        "open(log + '.replaced', 'w').close()\n"
        "time.sleep(120)\n"
    )
    task_id = _queued_id(d.cli("run", "--device", "cpu", "--", PY, "-c", job))
    log = _log(d, task_id)
    wait_for(lambda: Path(f"{log}.replaced").exists(), 30, "the job to replace its log")
    for _ in range(20):  # more requests than the owner has threads for them
        out = d.cli("logs", str(task_id))
        assert out.returncode == 1 and said in out.stderr, out
    assert d.ask(rq.Ping()).ready is True
    assert d.cli("cancel", str(task_id)).returncode == 0
    d.wait_state(task_id, {"cancelled"})
    assert d.proc is not None
    stop = d.cli("daemon", "--stop")
    assert stop.returncode == 0, stop.stderr
    assert d.proc.wait(15) == 0  # no thread left waiting on the FIFO holds the owner up
