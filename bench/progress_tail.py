"""What reading a running job's progress costs (issue 29): ``jobs/progress.read_progress`` on a small log
and on a 1 GiB log (sparse, a tqdm bar's updates at its end), each read as the queue reads it (the
``GPUTRAY_PROGRESS`` file looked for, then the log's last 16 KiB). Goal: a read of the 1 GiB log costs
no more than 1.5x a read of the small one (only the tail is read), and a read well under 1 ms, so the
queue's at most two reads a second per job cost nothing.
Run: ``python bench/progress_tail.py``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from gputray.scheduler.jobs.progress import read_progress

READS = 2000
BAR = "".join(
    f"\r {i}%|{'#' * (i // 10):<10}| {i}/100 [00:{i:02d}<00:{100 - i:02d},  1.00it/s]" for i in range(45)
)


def per_read_us(log: Path) -> float:
    found = read_progress(log)[0]
    assert found is not None and found.done == 44, found
    start = time.perf_counter()
    for _ in range(READS):
        read_progress(log)
    return (time.perf_counter() - start) / READS * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        small, big = Path(folder) / "small.log", Path(folder) / "big.log"
        small.write_text("starting\n" + BAR)
        with big.open("wb") as f:
            f.write(b"starting\n")
            f.truncate(1 << 30)
            f.seek(0, 2)
            f.write(BAR.encode())
        small_us, big_us = per_read_us(small), per_read_us(big)
        ratio = big_us / small_us
        verdict = "met" if ratio <= 1.5 and big_us < 1000 else "NOT met"
        print(
            f"progress read: {small_us:.0f} us per read of a {small.stat().st_size} B log, "
            f"{big_us:.0f} us of a 1 GiB log = {ratio:.2f}x  (goal <= 1.5x and < 1000 us): {verdict}"
        )


if __name__ == "__main__":
    main()
