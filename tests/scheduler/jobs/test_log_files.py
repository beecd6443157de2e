"""Reading a job's log that the job may have replaced: real FIFOs, links, devices and files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gputray.scheduler.jobs.log_files import LogNotReadable, read_log

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and links to devices are POSIX")


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    log = tmp_path / "task-1.log"
    os.mkfifo(log)  # nobody writes: an open for reading without O_NONBLOCK waits for ever
    with pytest.raises(LogNotReadable, match=r"is a FIFO, not a regular file: not read"):
        read_log(log, 0, 1 << 17)


@pytest.mark.parametrize("target", ["/dev/zero", "elsewhere.txt"])
def test_a_link_is_not_followed(tmp_path: Path, target: str) -> None:
    (tmp_path / "elsewhere.txt").write_text("another file of the user's")
    log = tmp_path / "task-1.log"
    log.symlink_to(target if target.startswith("/") else tmp_path / target)
    with pytest.raises(LogNotReadable, match=r"is a symbolic link: not followed"):
        read_log(log, 0, 1 << 17)


def test_a_device_or_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LogNotReadable, match=r"/dev/zero is a device, not a regular file"):
        read_log("/dev/zero", 0, 1 << 17)
    with pytest.raises(LogNotReadable, match=r"is a folder, not a regular file"):
        read_log(tmp_path, 0, 1 << 17)


def test_a_log_reads_from_the_offset_to_its_size_and_none_is_empty(tmp_path: Path) -> None:
    log = tmp_path / "task-1.log"
    assert read_log(log, 0, 100) == (b"", 0)
    log.write_bytes(b"0123456789")
    assert read_log(log, 3, 4) == (b"3456", 10)
    assert read_log(log, 8, 100) == (b"89", 10)
    assert read_log(log, 12, 100) == (b"", 10)


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_appending_to_a_log_the_job_replaced_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """The next attempt's header, the demo note, the supervisor: an append to a FIFO nobody reads
    waited for ever (the dispatcher's thread), and one to a link wrote wherever it pointed."""
    import threading

    from gputray.scheduler.paths import open_private_append

    log = tmp_path / "task-1.log"
    target = tmp_path / "elsewhere.txt"
    if kind == "fifo":
        os.mkfifo(log)
    else:
        log.symlink_to(target)
    said: list[str] = []

    def append() -> None:
        try:
            os.close(open_private_append(log))
        except OSError as exc:
            said.append(str(exc))

    worker = threading.Thread(target=append, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the append waited on the FIFO"
    words = {"fifo": "a FIFO is there, not a regular file", "link": "a symbolic link is there, not followed"}
    assert len(said) == 1 and said[0].endswith(f"{words[kind]}: '{log}'")
    assert not target.exists()
