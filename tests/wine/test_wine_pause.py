"""pause-job on Windows: every thread of the job's processes (its child's too) suspended, then resumed
— real Windows processes under Wine. The job and its child each count in a file of their own; a
suspended process counts no more."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

from waiting import wait_for
from winpython import Owner, WinePython, winpath

# The job and its child each write a growing count to a file of their own (whole: temp file + replace).
COUNTER_JOB = textwrap.dedent(
    """
    import os, subprocess, sys, time
    out = sys.argv[1]
    name = "child" if sys.argv[2:] == ["child"] else "parent"
    if name == "parent":
        subprocess.Popen([sys.executable, __file__, out, "child"])
    n = 0
    while True:
        n += 1
        open(f"{out}.{name}.tmp", "w").write(str(n))
        os.replace(f"{out}.{name}.tmp", f"{out}.{name}")
        time.sleep(0.05)
    """
)


def counts(prefix: Path) -> list[int]:
    def read(name: str) -> int:
        mark = Path(f"{prefix}.{name}")
        return int(wait_for(lambda: mark.exists() and mark.read_text(), 60, name))

    return [read("parent"), read("child")]


def counting(prefix: Path) -> bool:
    before = counts(prefix)
    time.sleep(0.5)
    return all(a > b for a, b in zip(counts(prefix), before, strict=True))


def test_pause_job_suspends_the_job_and_its_child_and_resume_job_lets_them_go_on(
    win: WinePython, home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "counter job.py"
    script.write_text(COUNTER_JOB, "utf-8")
    marks = tmp_path / "count"
    owner = Owner(win, home, "--demo")
    try:
        job = ["run", "--device", "cpu", "--", win.python_exe, winpath(script), winpath(marks)]
        assert win.gputray(*job, home=home).returncode == 0
        wait_for(lambda: counting(marks), 60, "the job and its child to count")
        paused = win.gputray("pause-job", "1", "--json", home=home)
        assert paused.returncode == 0, paused.text
        doc = json.loads(paused.stdout)
        assert doc["state"] == "running" and doc["paused_at"] is not None
        assert doc["reason"].startswith("paused by you at "), doc
        held = counts(marks)
        time.sleep(1.0)  # a suspended process writes nothing, however long it is given
        assert counts(marks) == held
        log = Path(doc["log_path"].replace("\\", "/").removeprefix("Z:")).read_text("utf-8")  # Wine's Z: is /
        assert "their threads suspended" in log, log
        resumed = win.gputray("resume-job", "1", home=home)
        assert resumed.returncode == 0, resumed.text
        wait_for(lambda: counting(marks), 60, "the job and its child to count again")
        assert win.gputray("cancel", "1", home=home).returncode == 0
    finally:
        owner.stop()
