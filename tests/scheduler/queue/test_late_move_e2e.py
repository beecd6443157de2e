"""A job its own progress shows ending late is moved, through a real owner on the demo pair: a family
that never ran, ``prefer = "fastest"``, goes to the idle Radeon 780M while our other job holds the
GeForce RTX 5060 Ti; it prints ``step N/100`` slowly; once the 5060 Ti frees, the owner's timer stops it
and runs it again there, and its reason, its log and the queue's event say why, with the arithmetic."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import QueueEvent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")

AMD = "pci:0000:64:00.0"
NVIDIA = "pci:0000:01:00.0"
PY = sys.executable

HOLD = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
"""
# 100 steps of 1.5 s (~150 s in all) where it runs; a tqdm-like line per step
SLOW = """
import sys, time
for i in range(1, 101):
    time.sleep(1.5)
    print(f"step {i}/100", flush=True)
"""


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def events() -> list[QueueEvent]:
    return []


@pytest.fixture
def client(paths: Paths, events: list[QueueEvent], tmp_path: Path) -> Iterator[ipc.IpcClient]:
    quiet = tmp_path / "no-load.toml"  # no scripted llama-server on the 5060 Ti: only our jobs hold it
    quiet.write_text("")
    with running_owner(paths, on_event=events.append, scenario=quiet), ipc.IpcClient(paths) as c:
        yield c


def _get(client: ipc.IpcClient, task_id: int) -> TaskView:
    return client.ask(rq.Get(id=task_id)).task


def test_a_late_job_on_the_igpu_is_run_again_on_the_dgpu_once_it_frees(
    client: ipc.IpcClient, tmp_path: Path, events: list[QueueEvent]
) -> None:
    go = tmp_path / "go"
    hold = client.ask(rq.Run(argv=[PY, "-c", HOLD, str(go)], cwd=str(tmp_path),
                             overrides={"device_prefs": ["5060ti"]})).tasks[0]  # fmt: skip
    wait_for(lambda: _get(client, hold.id).state == "running", what="the 5060 Ti held")
    late = client.ask(rq.Run(argv=[PY, "-c", SLOW], cwd=str(tmp_path), overrides={
        "family": "diffuse", "prefer": "fastest", "device_prefs": ["5060ti", "780m"], "on_busy": "redirect",
    })).tasks[0]  # fmt: skip
    try:
        first = wait_for(lambda: (t := _get(client, late.id)).state == "running" and t, what="its first run")
        assert first.device == AMD and first.attempts == 1  # never ran: the plain rules, the 5060 Ti busy
        # its progress gives it a time left there; the 5060 Ti's time to free is unknown while it is held
        wait_for(lambda: _get(client, late.id).eta_s is not None, what="its own estimate")
        go.touch()  # the 5060 Ti frees
        moved = wait_for(
            lambda: (t := _get(client, late.id)).state == "running" and t.attempts == 2 and t,
            what="its run on the 5060 Ti",
        )
        assert moved.device == NVIDIA
        said = next(r for r in c.inner(moved.reason) if isinstance(r, c.MovedLate))
        assert (said.from_device, said.to_device) == ("Radeon 780M", "GeForce RTX 5060 Ti")
        assert said.done <= 0.15 and said.there_s * 1.5 <= said.left_s  # clearly sooner, little lost
        assert said.wait_s == 0.0
        words = render(said)
        assert words.startswith("moved to GeForce RTX 5060 Ti: on Radeon 780M it would end in ~")
        log = Path(moved.log_path or "").read_text(encoding="utf-8")
        first_run, _second_run = log.split("attempt 2, on GeForce RTX 5060 Ti", 1)
        assert "step 3/100" in first_run and f"gputray: {words}" in first_run
        assert any(e.kind == "redirected" and e.task.id == late.id for e in events)
        assert moved.on_late == "stay"  # never moved again
    finally:
        go.touch()
        client.ask(rq.Cancel(ids=[late.id]))
