from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import psutil
import pytest
from waiting import wait_for

from gputray.scheduler.jobs.launcher import Job, LaunchFailed, launch

PY = sys.executable


def run(argv: list[str], tmp_path: Path, **kw: object) -> tuple[Job, list[int]]:
    codes: list[int] = []
    job = launch(
        argv,
        env={"PATH": "/usr/bin:/bin", "X_TEST": "1"},
        log_path=tmp_path / "logs" / "task-1.log",
        on_exit=lambda j, code: codes.append(code),
        **kw,
    )  # type: ignore[arg-type]
    return job, codes


def test_output_and_errors_go_to_the_log_and_exit_is_reported(tmp_path: Path) -> None:
    job, codes = run(
        [
            PY,
            "-c",
            "import os,sys; print('out', os.environ['X_TEST']); print('err', file=sys.stderr); sys.exit(3)",
        ],
        tmp_path,
        header="=== header ===",
    )
    assert job.wait(timeout=30) == 3
    assert codes == [3]
    text = (tmp_path / "logs" / "task-1.log").read_text()
    assert text.startswith("=== header ===\n")
    assert "out 1" in text and "err" in text
    assert job.kill_reason is None and not job.running


def test_arguments_are_never_parsed_by_a_shell(tmp_path: Path) -> None:
    hostile = [
        "a'; touch pwned #",
        "$(touch pwned2)",
        "`touch pwned3`",
        "x && touch pwned4",
        "日本語 ファイル",
    ]
    job, _ = run(
        [PY, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))", *hostile], tmp_path, cwd=tmp_path
    )
    assert job.wait(timeout=30) == 0
    last = (tmp_path / "logs" / "task-1.log").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert json.loads(last) == hostile
    assert not list(tmp_path.glob("pwned*"))


TREE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess,sys,time; g=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);"
    "print(g.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
print(child.pid, child.stdout.readline().strip(), flush=True)
time.sleep(60)
"""


def _pids_from_log(path: Path) -> list[int]:
    lines = wait_for(
        lambda: [ln for ln in path.read_text().splitlines() if ln and ln[0].isdigit()],
        timeout_s=20,
        what="the job to print its children",
    )
    return [int(p) for p in lines[0].split()]


def test_cancel_kills_the_whole_tree(tmp_path: Path) -> None:
    job, codes = run([PY, "-c", TREE], tmp_path, grace_s=1.0)
    pids = [job.pid, *_pids_from_log(tmp_path / "logs" / "task-1.log")]
    assert len(pids) == 3 and all(psutil.pid_exists(p) for p in pids)
    job.cancel("cancelled")
    assert job.wait(timeout=30) is not None
    assert job.kill_reason == "cancelled" and codes and codes[0] != 0
    gone = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=10)[1]
    assert not [p for p in gone if p.status() != psutil.STATUS_ZOMBIE]


def test_timeout_stops_the_job(tmp_path: Path) -> None:
    job, codes = run([PY, "-c", "import time; time.sleep(60)"], tmp_path, timeout_s=0.5, grace_s=1.0)
    assert job.wait(timeout=30) is not None
    assert job.kill_reason == "timeout" and codes[0] != 0


def test_stragglers_of_a_finished_job_are_stopped(tmp_path: Path) -> None:
    script = (
        "import subprocess,sys; p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);"
        "print(p.pid, flush=True)"
    )
    job, _ = run([PY, "-c", script], tmp_path)
    assert job.wait(timeout=30) == 0
    (straggler,) = _pids_from_log(tmp_path / "logs" / "task-1.log")
    _, alive = (
        psutil.wait_procs([psutil.Process(straggler)], timeout=10)
        if psutil.pid_exists(straggler)
        else ([], [])
    )
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


def test_exit_callback_runs_in_time_for_the_next_job(tmp_path: Path) -> None:
    done = threading.Event()
    job = launch([PY, "-c", "pass"], env={}, log_path=tmp_path / "l.log", on_exit=lambda j, c: done.set())
    assert done.wait(timeout=30)
    assert job.returncode == 0


def test_a_missing_program_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        LaunchFailed, match="cannot start no-such-tool-xyz: the program no-such-tool-xyz does not exist"
    ):
        launch(["no-such-tool-xyz", "-i", "x"], env={"PATH": str(tmp_path)}, log_path=tmp_path / "l.log")
    assert "no-such-tool-xyz" in (tmp_path / "l.log").read_text()
    with pytest.raises(LaunchFailed, match="empty"):
        launch([], env={}, log_path=tmp_path / "l.log")


def test_an_environment_the_os_refuses_is_a_launch_failure_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(LaunchFailed, match=r"cannot start .*illegal environment variable name"):
        launch([PY, "-c", "pass"], env={"A=B": "1"}, log_path=tmp_path / "l.log")
    assert "illegal environment variable name" in (tmp_path / "l.log").read_text()


# Like llama-server's handler (tools/server/server.cpp): a first SIGTERM shuts down cleanly, a second one
# "terminating immediately"; a child in the same process group counts its own.
COUNTS_SIGTERMS = """
import os, signal, subprocess, sys, time
got = []
def on_term(signum, frame):
    got.append(signum)
    if len(got) > 1:
        print("Received second interrupt, terminating immediately.", flush=True)
        os._exit(1)
signal.signal(signal.SIGTERM, on_term)
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print("ready", flush=True)
while not got:
    time.sleep(0.05)
time.sleep(0.5)  # cleaning up before exit, as a server does; a second signal would arrive meanwhile
print(f"stopped cleanly after {len(got)} SIGTERM", flush=True)
child.wait()
"""
CHILD = """
import signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
print("child ready", flush=True)
while not got:
    time.sleep(0.05)
time.sleep(0.5)
print(f"child: {len(got)} SIGTERM", flush=True)
"""


def test_a_stopped_job_gets_one_sigterm_per_process(tmp_path: Path) -> None:
    """Its process group is signalled once, and only the processes outside that group one by one: a
    second SIGTERM is "hurry" to some programs, and llama-server then skipped its clean shutdown."""
    job, _codes = run([PY, "-c", COUNTS_SIGTERMS, CHILD], tmp_path, grace_s=10.0)
    log = tmp_path / "logs" / "task-1.log"
    wait_for(lambda: "child ready" in (t := log.read_text()) and "\nready" in f"\n{t}", what="both handlers")
    job.cancel("cancelled")
    assert job.wait(timeout=30) is not None
    said = wait_for(lambda: "child:" in (text := log.read_text()) and text, what="the child's count")
    assert "stopped cleanly after 1 SIGTERM" in said and "child: 1 SIGTERM" in said, said
    assert "second interrupt" not in said, said
