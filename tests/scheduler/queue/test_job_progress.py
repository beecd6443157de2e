"""Progress read from real jobs through a real owner: a job printing a real tqdm bar and one writing
``GPUTRAY_PROGRESS`` show ``progress`` and ``eta_s`` in ``queue --json`` and a PROGRESS column in
``gputray queue``; the device they hold frees when their progress says, and a family that never ran
gets its first estimate from its own running job."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.job_progress import FIRST_ESTIMATE_S
from gputray.scheduler.replies import TaskView

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")

AMD = "pci:0000:64:00.0"
NVIDIA = "pci:0000:01:00.0"
PY = sys.executable

# 40 of 100 steps of a real tqdm bar, then it waits for the test's word, then the other 60
TQDM_JOB = """
import os, sys, time
from tqdm import tqdm
go = sys.argv[1]
for i in tqdm(range(100), mininterval=0, miniters=1):
    while i == 40 and not os.path.exists(go):
        time.sleep(0.05)
"""
# the documented file: one line "done total"
FILE_JOB = """
import os, sys, time
with open(os.environ["GPUTRAY_PROGRESS"], "w") as f:
    f.write("3 4\\n")
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
"""


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def client(paths: Paths) -> Iterator[ipc.IpcClient]:
    with running_owner(paths), ipc.IpcClient(paths) as c:
        yield c


def _task(client: ipc.IpcClient, task_id: int) -> TaskView:
    return next(t for t in client.ask(rq.Queue(all=True)).tasks if t.id == task_id)


def test_a_tqdm_job_and_a_progress_file_job_show_their_progress_and_time_left(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    bar = client.ask(rq.Run(argv=[PY, "-c", TQDM_JOB, str(go)], cwd=str(tmp_path),
                            overrides={"family": "train", "device_prefs": ["5060ti"]})).tasks[0]  # fmt: skip
    told = client.ask(rq.Run(argv=[PY, "-c", FILE_JOB, str(go)], cwd=str(tmp_path),
                             overrides={"device_prefs": ["780m"]})).tasks[0]  # fmt: skip
    later = client.ask(rq.Run(argv=[PY, "-c", "pass"], cwd=str(tmp_path),
                              overrides={"family": "train", "device_prefs": ["5060ti", "780m"],
                                         "on_busy": "wait"})).tasks[0]  # fmt: skip
    # the time left comes once the job has worked FIRST_ESTIMATE_S: 40 of 100 done, 60 to go at its pace
    seen = wait_for(lambda: (t := _task(client, bar.id)).eta_s is not None and t, what="the bar's time left")
    assert seen.progress == pytest.approx(0.40)
    worked = (seen.eta_s or 0) / 1.5  # eta = worked × 0.6 / 0.4
    assert worked >= FIRST_ESTIMATE_S
    assert client.ask(rq.Get(id=bar.id)).task.progress == pytest.approx(0.40)  # `get` and `wait` too
    file_view = wait_for(lambda: (t := _task(client, told.id)).eta_s is not None and t, what="the file's")
    assert file_view.progress == pytest.approx(0.75)
    # the 5060 Ti frees when the bar says; the family that never ran is estimated from its own job
    slots = {d.key: d for d in client.ask(rq.Queue(all=False)).devices}
    assert slots[NVIDIA].free_in_s is not None and slots[NVIDIA].free_in_s > 0
    estimates = wait_for(lambda: _task(client, later.id).estimate_s, what="the first estimate")
    by_key = {e.device_key: e for e in estimates}
    assert by_key[NVIDIA].run_s > FIRST_ESTIMATE_S and by_key[NVIDIA].runs == 0
    assert by_key[AMD].run_s == pytest.approx(4 * by_key[NVIDIA].run_s, rel=0.2)  # scaled as any run
    # what the command line shows
    home = tmp_path / "home"
    listed = json.loads(gputray("queue", "--json", home=home).stdout)
    rows = {t["id"]: t for t in (listed["tasks"] if isinstance(listed, dict) else listed)}
    assert rows[bar.id]["progress"] == pytest.approx(0.40) and rows[bar.id]["eta_s"] > 0
    assert rows[later.id]["progress"] is None and rows[later.id]["eta_s"] is None
    table = gputray("queue", home=home, env={"COLUMNS": "200"}).stdout
    lines = table.splitlines()
    assert "frees in ~" in lines[0]  # "jobs: GeForce RTX 5060 Ti 1/1 (frees in ~8 s) · …"
    header = next(x for x in lines if x.startswith("ID"))
    assert "PROGRESS" in header.split()
    line = next(x for x in lines if x.split()[0] == str(bar.id))
    assert "40% ~" in line and "75% ~" in next(x for x in lines if x.split()[0] == str(told.id))
    go.touch()
    # the waiting task of the family starts once the bar ends, though its family's runs now teach it a
    # memory need (job_peaks) its stored spec does not have: that once made every start a no-op
    wait_for(lambda: _task(client, later.id).state == "succeeded", what="the waiting task to run")
    assert _task(client, bar.id).progress is None  # ended: no progress shown
