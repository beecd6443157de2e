"""Exclusive apps (issue 27, item 3), end to end through a real owner: a real process named like the
game (``cs2``: a symlink to the interpreter) appears on the simulated RTX 5060 Ti's process list; our
running job there (a real process counting in a file) is paused — it stops counting — no new job
starts there while the game runs, and both go on once the game has exited for the settle time. A job
on the other GPU keeps running the whole time."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.monitor.sim_holds import write_hold
from gputray.monitor.units import GIB
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.queue.exclusive_apps import app_matches
from gputray.scheduler.reasons.render import ENDED_STATES, render
from gputray.scheduler.replies import TaskView

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real jobs frozen on Linux")

PY = sys.executable
NVIDIA = "pci:0000:01:00.0"
AMD = "pci:0000:64:00.0"


def _counter(mark: Path, stop: Path) -> list[str]:
    """A job that counts in a file every 50 ms until ``stop`` exists: while frozen the count stands still."""
    body = f"import os, time\nn = 0\nwhile not os.path.exists({str(stop)!r}):\n n += 1\n"
    body += f" open({str(mark)!r}, 'w').write(str(n))\n time.sleep(0.05)"
    return [PY, "-c", body]


def _count(mark: Path) -> int:
    text = mark.read_text() if mark.exists() else ""
    return int(text) if text.isdigit() else 0


def _task(client: ipc.IpcClient, task_id: int) -> TaskView:
    return client.ask(rq.Get(id=task_id)).task


@contextlib.contextmanager
def game(tmp_path: Path, holds: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``cs2``: a real process of that name holding 2 GiB on the simulated 5060 Ti while it lives."""
    link = tmp_path / "cs2"
    link.symlink_to(PY)
    proc = subprocess.Popen([str(link), "-c", "import time; time.sleep(600)"])
    try:
        write_hold(holds, proc.pid, "5060ti", 2 * GIB, util_percent=60)
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_game_pauses_our_job_on_its_gpu_and_it_goes_on_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holds = tmp_path / "holds"
    holds.mkdir()
    monkeypatch.setenv("GPUTRAY_SIM_HOLDS", str(holds))
    paths = home_paths(tmp_path, monkeypatch)
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text('[exclusive]\napps = ["cs2", "steam_app_*"]\nsettle = "1s"\n')
    quiet = tmp_path / "no-load.toml"
    quiet.write_text("")
    owner = Owner(paths, demo=True, scenario=quiet)
    owner.start()
    stop = tmp_path / "stop"
    try:
        with ipc.IpcClient(paths, timeout_s=60) as client:

            def run(name: str, device: str) -> TaskView:
                argv = _counter(tmp_path / name, stop)
                return client.ask(rq.Run(argv=argv, name=name, overrides={"device_prefs": [device]})).tasks[0]

            job = run("job", NVIDIA)
            other = run("other", AMD)
            wait_for(
                lambda: _count(tmp_path / "job") > 0 and _count(tmp_path / "other") > 0, what="both to count"
            )
            with game(tmp_path, holds):
                paused = wait_for(
                    lambda: (t := _task(client, job.id)).shown_state == "paused" and t, what="the job paused"
                )
                assert render(paused.reason).startswith("paused while cs2 uses its GPU at "), render(
                    paused.reason
                )
                assert render(paused.reason, "ja").startswith("cs2 が GPU を使うため ")
                assert client.ask(rq.Status()).taken == {NVIDIA: "cs2"}
                later = run("later", NVIDIA)  # nothing new starts on the taken GPU
                frozen_at = _count(tmp_path / "job")
                other_at = _count(tmp_path / "other")
                wait_for(
                    lambda: _count(tmp_path / "other") > other_at + 10, what="the other GPU's job to go on"
                )
                assert _count(tmp_path / "job") == frozen_at  # paused: it did not count on
                assert _task(client, later.id).state == "waiting"
                waits = render(_task(client, later.id).reason)  # says who took the GPU, not "paused"
                assert waits == (
                    "waiting for GeForce RTX 5060 Ti: taken by cs2: no job starts there until it exits"
                ), waits
            resumed = wait_for(
                lambda: (t := _task(client, job.id)).shown_state == "running" and t, what="the job resumed"
            )
            said = render(resumed.reason)  # why it was paused stays said
            assert said.startswith("paused while cs2 used its GPU at ") and "; resumed " in said, said
            assert render(resumed.reason, "ja").startswith("cs2 が GPU を使っていたため ")
            wait_for(lambda: _count(tmp_path / "job") > frozen_at, what="the job to count again")
            assert client.ask(rq.Status()).taken == {}
            stop.write_text("")
            for task in (job, other):
                wait_for(
                    lambda t=task: _task(client, t.id).state == "succeeded", what=f"{task.name} to finish"
                )
            ended = wait_for(
                lambda: (t := _task(client, later.id)).state in ENDED_STATES and t,
                what="the later job to run after",
            )
            assert ended.state == "succeeded", (ended.state, render(ended.reason))
            notices = owner.exclusive.notices if owner.exclusive is not None else []
            assert notices == [
                "cs2 uses GeForce RTX 5060 Ti: gputray pauses its jobs there and starts none",
                "cs2 has left GeForce RTX 5060 Ti: gputray's jobs there go on",
            ]
    finally:
        stop.write_text("")
        owner.stop()


def test_a_job_paused_for_a_game_goes_on_when_the_game_has_left_under_the_next_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs outlive their owner; the next owner reads the app a frozen job was paused for from its
    stored reason, shows the GPU taken and lets the job go on once the app has left. Before: the job
    stayed frozen for good after a restart."""
    holds = tmp_path / "holds"
    holds.mkdir()
    monkeypatch.setenv("GPUTRAY_SIM_HOLDS", str(holds))
    paths = home_paths(tmp_path, monkeypatch)
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text('[exclusive]\napps = ["cs2"]\nsettle = "1s"\n')
    quiet = tmp_path / "no-load.toml"
    quiet.write_text("")
    stop = tmp_path / "stop"
    with contextlib.ExitStack() as later:
        later.callback(stop.touch)
        with running_owner(paths, scenario=quiet) as first, ipc.IpcClient(paths, timeout_s=60) as client:
            job = client.ask(rq.Run(argv=_counter(tmp_path / "job", stop), name="job",
                                    overrides={"device_prefs": [NVIDIA]})).tasks[0]  # fmt: skip
            wait_for(lambda: _count(tmp_path / "job") > 0, what="the job to count")
            playing = later.enter_context(game(tmp_path, holds))
            wait_for(lambda: _task(client, job.id).shown_state == "paused", what="the job paused")
            first.stop(kill_running=False)  # the owner goes (a crash, an update); its jobs run on
        # The owner went while the game is up; the next one adopts the frozen job.
        later.enter_context(running_owner(paths, scenario=quiet))
        client = later.enter_context(ipc.IpcClient(paths, timeout_s=60))
        assert _task(client, job.id).shown_state == "paused"
        held = _count(tmp_path / "job")
        wait_for(lambda: client.ask(rq.Status()).taken == {NVIDIA: "cs2"}, what="the GPU seen taken")
        playing.kill()
        playing.wait(timeout=10)
        wait_for(lambda: _task(client, job.id).shown_state == "running", what="the job to go on")
        wait_for(lambda: _count(tmp_path / "job") > held, what="the job to count again")
        assert client.ask(rq.Status()).taken == {}
        stop.touch()
        wait_for(lambda: _task(client, job.id).state == "succeeded", what="the job to finish")


@pytest.mark.parametrize(
    ("process", "matches"),
    [("cs2.exe", True), ("CS2.EXE", True), ("cs2", True), ("steam_app_730.exe", True), ("cs2x.exe", False)],
)
def test_exclusive_apps_match_windows_names_with_or_without_exe(process: str, matches: bool) -> None:
    assert app_matches(process, ("cs2", "steam_app_*", "blender.exe")) is matches
