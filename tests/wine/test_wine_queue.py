"""The queue on Windows: run, submit, queue, logs --follow, cancel (the whole process tree), retry, and
an owner killed mid-run — real Windows processes under Wine, in folders with spaces and Japanese names."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for
from winpython import Owner, WinePython, winpath

# A job that starts a child and records both pids, then counts (a count file each, every 50 ms: a
# suspended process counts no more): cancel must stop the child too.
TREE_JOB = textwrap.dedent(
    """
    import os, subprocess, sys, time
    out = sys.argv[1]
    def mark(name, text):  # whole or absent: the test never reads a half-written file
        open(out + name + ".tmp", "w").write(text)
        os.replace(out + name + ".tmp", out + name)
    def count(name):
        for n in range(12000):
            mark(name + ".count", str(n))
            time.sleep(0.05)
    if sys.argv[2:] == ["child"]:
        mark(".child", str(os.getpid()))
        count(".child")
    child = subprocess.Popen([sys.executable, __file__, out, "child"])
    mark(".parent", str(os.getpid()))
    print("started child", child.pid, flush=True)
    count(".parent")
    """
)

# A job that leaves a child behind and ends: the child must not outlive it (it could hold a GPU).
LEAVER_JOB = textwrap.dedent(
    """
    import subprocess, sys, time
    out = sys.argv[1]
    if sys.argv[2:] == ["child"]:
        import os
        open(out + ".child.tmp", "w").write(str(os.getpid()))
        os.replace(out + ".child.tmp", out + ".child")  # whole or absent: never read half-written
        time.sleep(600)
    subprocess.Popen([sys.executable, __file__, out, "child"])
    while True:  # the child's pid is written; then the job ends, leaving it
        try:
            open(out + ".parent", "w").write(open(out + ".child").read())
            break
        except FileNotFoundError:
            time.sleep(0.05)
    """
)

# A job that prints, waits for a file, prints again: `logs --follow` is started in between.
STEPS_JOB = textwrap.dedent(
    """
    import os, sys, time
    print("step 1 of", sys.argv[1], flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
    print("step 2 — 学習 done", flush=True)
    """
)


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    folder = tmp_path / "ジョブ folder"
    folder.mkdir()
    (folder / "tree job.py").write_text(TREE_JOB, "utf-8")
    (folder / "学習 steps.py").write_text(STEPS_JOB, "utf-8")
    (folder / "leaver.py").write_text(LEAVER_JOB, "utf-8")
    return folder


def tasks(win: WinePython, home: Path) -> dict[int, dict[str, Any]]:
    listed = win.gputray("queue", "--all", "--json", home=home)
    assert listed.returncode == 0, listed.text
    return {t["id"]: t for t in json.loads(listed.stdout)["tasks"]}


def state(win: WinePython, home: Path, task_id: int) -> str:
    return str(tasks(win, home)[task_id]["state"])


def pids(prefix: Path) -> list[int]:
    wait_for(lambda: all(Path(f"{prefix}.{p}").exists() for p in ("parent", "child")), 60, "both pid files")
    return [int(wait_for(lambda p=p: Path(f"{prefix}.{p}").read_text(), 10, p)) for p in ("parent", "child")]


def counts(prefix: Path) -> list[int]:
    def read(name: str) -> int:
        mark = Path(f"{prefix}.{name}.count")
        return int(wait_for(lambda: mark.exists() and mark.read_text(), 60, name))

    return [read("parent"), read("child")]


def counting(prefix: Path) -> bool:
    before = counts(prefix)
    time.sleep(0.5)
    return all(a > b for a, b in zip(counts(prefix), before, strict=True))


def test_run_submit_queue_and_logs_follow(win: WinePython, home: Path, jobs: Path) -> None:
    owner = Owner(win, home, "--demo")
    try:
        go = jobs / "go now"
        script = winpath(jobs / "学習 steps.py")
        job = [win.python_exe, script, "名前 one", winpath(go)]
        queued = win.gputray("run", "--device", "cpu", "--", *job, home=home)
        assert queued.returncode == 0 and queued.stdout.startswith("#1 python.exe: "), queued.text
        wait_for(lambda: "step 1 of" in win.gputray("logs", "1", home=home).stdout, 60, "the first line")
        follow = subprocess.Popen(
            win.argv("-m", "gputray.gui.entry", "logs", "1", "--follow"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=win.env({"GPUTRAY_HOME": winpath(home), "PYTHONIOENCODING": "utf-8"}),  # the log exactly
        )
        wait_for(lambda: state(win, home, 1) == "running", 30, "task 1 running")
        go.touch()
        out, err = follow.communicate(timeout=120)
        assert follow.returncode == 0, err
        text = out.decode("utf-8")
        assert "\r\r\n" not in text  # the job's own CRLF, not doubled by a second translation
        assert "step 1 of 名前 one\r\n" in text and "step 2 — 学習 done\r\n" in text, text
        assert text.startswith("=== gputray task #1 'python.exe'")
        assert state(win, home, 1) == "succeeded"

        task_file = jobs / "夜間 task.toml"
        task_file.write_text(
            f"name = 'nightly 学習'\nkind = 'command'\ndevices = ['cpu']\n"
            f"argv = {json.dumps([win.python_exe, script, 'from a task file', winpath(go)])}\n",
            "utf-8",
        )
        submitted = win.gputray("submit", "--task", winpath(task_file), home=home)
        assert submitted.returncode == 0, submitted.text
        wait_for(lambda: state(win, home, 2) == "succeeded", 60, "the task file's job")
        listing = win.gputray("queue", "--all", home=home)
        assert listing.returncode == 0
        rows = listing.stdout.splitlines()
        header = next(r for r in rows if r.startswith("ID "))  # after the owner's one-line summary
        columns = ["ID", "STATE", "PRI", "DEVICE", "ENV", "START", "END", "DUR", "NAME", "REASON"]
        assert header.split() == columns
        assert any(r.split()[:4] == ["2", "succeeded", "0", "CPU"] and "nightly ??" in r for r in rows), rows
        assert "from a task file" in win.gputray("logs", "2", home=home).stdout
    finally:
        owner.stop()


def test_cancel_stops_the_job_and_its_child_then_retry_runs_it_again(
    win: WinePython, home: Path, jobs: Path
) -> None:
    owner = Owner(win, home, "--demo")
    try:
        marks = jobs / "first"
        job = ["run", "--device", "cpu", "--", win.python_exe, winpath(jobs / "tree job.py"), winpath(marks)]
        assert win.gputray(*job, home=home).returncode == 0
        tree = pids(marks)
        assert win.pids_alive(tree) == [True, True]
        # pause-job (issue 28): every thread of the job and its child suspended, then resumed
        wait_for(lambda: counting(marks), 60, "the job and its child to count")
        paused = win.gputray("pause-job", "1", "--json", home=home)
        assert paused.returncode == 0, paused.text
        doc = json.loads(paused.stdout)
        assert doc["paused_at"] is not None and doc["reason"].startswith("paused by you at "), doc
        held = counts(marks)
        time.sleep(1.0)  # a suspended process writes nothing, however long it is given
        assert counts(marks) == held
        log = Path(doc["log_path"].replace("\\", "/").removeprefix("Z:")).read_text("utf-8")  # Z: is /
        assert "their threads suspended" in log, log
        assert win.gputray("resume-job", "1", home=home).returncode == 0
        wait_for(lambda: counting(marks), 60, "the job and its child to count again")
        cancelled = win.gputray("cancel", "1", home=home)
        assert cancelled.returncode == 0 and "#1 python.exe: cancelled" in cancelled.stdout, cancelled.text
        wait_for(lambda: win.pids_alive(tree) == [False, False], 30, "the job and its child to be gone")
        assert state(win, home, 1) == "cancelled"

        for mark in ("parent", "child"):
            Path(f"{marks}.{mark}").unlink()
        retried = win.gputray("retry", "1", home=home)
        assert retried.returncode == 0, retried.text
        again = pids(marks)
        assert again != tree and win.pids_alive(again) == [True, True]
        assert f"started child {again[1]}" in win.gputray("logs", "1", home=home).stdout  # the new run's log
        assert win.gputray("cancel", "1", home=home).returncode == 0
        wait_for(lambda: win.pids_alive(again) == [False, False], 30, "the retried job to be gone")
    finally:
        owner.stop()


def test_an_owner_killed_mid_run_is_adopted_by_the_next(win: WinePython, home: Path, jobs: Path) -> None:
    """The job's supervisor outlives a killed owner; the next owner adopts the running job, and its
    cancel still ends the whole tree (the job object, opened by name)."""
    owner = Owner(win, home, "--demo")
    marks = jobs / "crash"
    job = ["run", "--device", "cpu", "--", win.python_exe, winpath(jobs / "tree job.py"), winpath(marks)]
    assert win.gputray(*job, home=home).returncode == 0
    tree = pids(marks)
    win.kill(owner.pid)  # TerminateProcess on the owner: the job, under its supervisor, runs on
    owner.proc.wait(timeout=60)
    assert win.pids_alive(tree) == [True, True]
    saved = win.gputray("queue", "--all", home=home)
    assert "no gputray owner is running" in saved.stderr and " running " in saved.stdout

    owner = Owner(win, home, "--demo")
    try:
        assert state(win, home, 1) == "running"  # adopted, not interrupted
        assert win.pids_alive(tree) == [True, True]
        cancelled = win.gputray("cancel", "1", home=home)
        assert cancelled.returncode == 0, cancelled.text
        wait_for(lambda: win.pids_alive(tree) == [False, False], 60, "the adopted job tree to be stopped")
        wait_for(lambda: state(win, home, 1) == "cancelled", 60, "the adopted job's end to be recorded")
        for mark in ("parent", "child"):
            Path(f"{marks}.{mark}").unlink()
        assert win.gputray("retry", "1", home=home).returncode == 0
        again = pids(marks)
        assert win.pids_alive(again) == [True, True]
        assert win.gputray("cancel", "1", home=home).returncode == 0
        wait_for(lambda: win.pids_alive(again) == [False, False], 30, "the retried job to be gone")
    finally:
        owner.stop()


def test_a_finished_jobs_left_behind_child_is_stopped(win: WinePython, home: Path, jobs: Path) -> None:
    """POSIX kills the job's process group; Windows has its job object (a psutil walk would miss an
    orphan whose parent has already exited)."""
    owner = Owner(win, home, "--demo")
    try:
        marks = jobs / "left"
        job = ["run", "--device", "cpu", "--", win.python_exe, winpath(jobs / "leaver.py"), winpath(marks)]
        assert win.gputray(*job, home=home).returncode == 0
        wait_for(lambda: state(win, home, 1) == "succeeded", 60, "the job to end by itself")
        child = int(Path(f"{marks}.child").read_text())
        wait_for(lambda: win.pids_alive([child]) == [False], 30, "the left-behind child to be stopped")
    finally:
        owner.stop()
