"""Make room, not only wait (issue 27, items 1–2), end to end through a real owner: real resident
processes (tests/resident_stubs.py: named like the real program, speaking its API on 127.0.0.1) hold
memory on the simulated RTX 5060 Ti; a task needing 8 GiB there waits for it.

* ``free_when_idle = "always"``: the idle resident's own free call is seen by the stub, the memory is
  really given back, the task starts and its reason tells the story.
* ``"never"``, and a resident serving a request (whatever its policy), are never asked.
* ``"ask"``: the reason says who holds the memory and how to free it; ``free-resident`` (the same
  request the tray's button sends) frees it and the task starts.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from real_owner import home_paths
from resident_stubs import resident
from waiting import wait_for

from gputray.monitor.units import GIB
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskSpec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil ports, symlinked names")

PY = sys.executable
NVIDIA = "pci:0000:01:00.0"  # the simulated RTX 5060 Ti (16 GiB)


@pytest.fixture
def holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "holds"
    folder.mkdir()
    monkeypatch.setenv("GPUTRAY_SIM_HOLDS", str(folder))
    return folder


@contextlib.contextmanager
def owner_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> Iterator[tuple[Owner, ipc.IpcClient]]:
    paths: Paths = home_paths(tmp_path, monkeypatch)
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(config)
    quiet = tmp_path / "no-load.toml"  # no scripted external load: only the residents hold memory
    quiet.write_text("")
    owner = Owner(paths, demo=True, scenario=quiet)
    owner.start()
    try:
        with ipc.IpcClient(paths, timeout_s=60) as client:
            yield owner, client
    finally:
        owner.stop()


def _needs_8_gib(client: ipc.IpcClient, tmp_path: Path) -> TaskView:
    done = tmp_path / "job-done"
    argv = [PY, "-c", f"open({str(done)!r}, 'w').write('ran')"]
    overrides = {"device_prefs": [NVIDIA], "vram_bytes": 8 * GIB}
    return client.ask(rq.Run(argv=argv, name="train", overrides=overrides)).tasks[0]


def _task(client: ipc.IpcClient, task_id: int) -> TaskView:
    return client.ask(rq.Get(id=task_id)).task


def _nvidia_used(owner: Owner) -> int:
    snap = owner.monitor.latest
    reading = snap.reading(NVIDIA) if snap is not None else None
    return int(reading.sample.vram_used_bytes or 0) if reading is not None else 0


def test_always_frees_the_idle_resident_and_the_job_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    config = '[[resident]]\nname = "ComfyUI"\nfree_when_idle = "always"\nidle_after = "1s"\n'
    with (
        resident(tmp_path, "comfyui", holds=holds, hold_gib=12) as comfy,
        owner_with(tmp_path, monkeypatch, config) as (owner, client),
    ):
        seen = wait_for(
            lambda: next(  # its pid: another test on this machine may run a ComfyUI stand-in too
                (r for r in client.ask(rq.Status()).residents if r.pid == comfy.proc.pid), None
            ),
            what="the owner to see ComfyUI",
        )
        assert seen.pid == comfy.proc.pid and seen.port == comfy.port
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="ComfyUI's 12 GiB on the simulated 5060 Ti")
        task = _needs_8_gib(client, tmp_path)
        ended = wait_for(
            lambda: (t := _task(client, task.id)).state == "succeeded" and t,
            what="the job to run after the free",
        )
        assert comfy.paths_called("POST") == ["/free"]
        assert [call["body"] for call in comfy.calls() if call["path"] == "/free"] == [
            {"unload_models": True, "free_memory": True}
        ]
        assert (tmp_path / "job-done").read_text() == "ran"
        assert _nvidia_used(owner) < 2 * GIB  # the memory really came back
        assert owner.make_room is not None and owner.make_room.freed == 1
        freed = next(r for r in c.inner(ended.reason) if isinstance(r, c.RoomMade))
        assert freed.step == "freed" and freed.resident == "ComfyUI" and freed.freed_bytes > 11 * GIB, freed
        assert render(ended.reason, finished=True).startswith("freed 1"), render(ended.reason)
        assert "held by ComfyUI (idle " in render(ended.reason)
        assert "ComfyUI（アイドル" in render(ended.reason, "ja")
        # an ended task's reason reads in the past: not "…: starting" under "succeeded"
        past = render(ended.reason, finished=True)
        assert past.endswith("): then ran"), past
        assert render(ended.reason, "ja", finished=True).endswith("を解放しました。実行しました")
        assert render(ended.reason).endswith("): starting")


def test_a_task_waiting_for_a_resident_to_be_idle_long_enough_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    """Before the resident has been idle for its idle_after, the task's reason names it and when it
    will be asked — not only "needs 8.0 GiB, 3.5 GiB VRAM free" for ten minutes."""
    config = '[[resident]]\nname = "Ollama"\nfree_when_idle = "always"\nidle_after = "1h"\n'
    with (
        resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama,
        owner_with(tmp_path, monkeypatch, config) as (owner, client),
    ):
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="Ollama's 12 GiB on the simulated 5060 Ti")
        task = _needs_8_gib(client, tmp_path)
        said = wait_for(
            lambda: "once idle" in (words := render((t := _task(client, task.id)).reason)) and (t, words),
            what="the reason to name the resident it waits for",
        )
        waiting, words = said
        assert waiting.state == "waiting", waiting
        # when it will be asked, not how long it has been idle: the same words at every look
        assert re.search(
            r"; Ollama holds 12\.0 GiB; to be asked to free it for this task at \d\d:\d\d "
            r"\(once idle 60 min\)$",
            words,
        ), words
        assert render(waiting.reason, "ja").endswith("（アイドル 60 分）にこのタスクのために解放を依頼します")
        make_room = owner.make_room
        assert make_room is not None
        looks = make_room.looks
        wait_for(lambda: make_room.looks >= looks + 2, what="two more looks")
        assert render(_task(client, task.id).reason) == words
        assert ollama.paths_called("POST") == []  # not idle long enough: not asked yet


def test_never_and_a_busy_resident_are_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    config = (
        '[[resident]]\nname = "Ollama"\nfree_when_idle = "never"\nidle_after = "0s"\n'
        '[[resident]]\nname = "ComfyUI"\nfree_when_idle = "always"\nidle_after = "0s"\n'
    )
    with (
        resident(tmp_path, "ollama", holds=holds, hold_gib=6) as ollama,
        resident(tmp_path, "comfyui", holds=holds, hold_gib=6, busy=True) as comfy,
        owner_with(tmp_path, monkeypatch, config) as (owner, client),
    ):
        wait_for(  # by name: a real llama-server may run on this machine beside them
            lambda: {"Ollama", "ComfyUI"} <= {r.name for r in client.ask(rq.Status()).residents},
            what="both residents seen",
        )
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="their 12 GiB on the simulated 5060 Ti")
        task = _needs_8_gib(client, tmp_path)
        make_room = owner.make_room
        assert make_room is not None
        looks = make_room.looks
        wait_for(lambda: make_room.looks >= looks + 3, what="three looks with the task waiting")
        waiting = _task(client, task.id)
        assert waiting.state == "waiting", waiting
        assert ollama.paths_called("POST") == []  # never: not asked
        assert comfy.paths_called("POST") == []  # serving a prompt: not asked
        assert make_room.asked == {} and make_room.freed == 0


def _idle_s_said(reason: str) -> int:
    """The seconds in "(idle 4 s)" of a task's reason (-1 where it says none)."""
    found = re.search(r"\(idle (\d+) s\)", reason)
    return int(found.group(1)) if found else -1


def test_ask_says_who_holds_it_and_free_resident_frees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    config = '[[resident]]\nname = "Ollama"\nidle_after = "0s"\n'  # free_when_idle = "ask": the default
    with (
        resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama,
        owner_with(tmp_path, monkeypatch, config) as (owner, client),
    ):
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="Ollama's 12 GiB on the simulated 5060 Ti")
        task = _needs_8_gib(client, tmp_path)
        asked = wait_for(
            lambda: "free-resident ollama" in render((t := _task(client, task.id)).reason) and t,
            what="the reason to name Ollama and the command",
        )
        assert "Ollama holds 12.0 GiB (idle " in render(asked.reason), render(asked.reason)
        first_idle_s = _idle_s_said(render(asked.reason))
        wait_for(  # the reason follows the resident's idle time while the question stands (it kept the first)
            lambda: _idle_s_said(render(_task(client, task.id).reason)) > first_idle_s + 1,
            what="the reason's idle time to grow",
        )
        assert ollama.paths_called("POST") == []  # asked the user, not the resident
        client.ask(
            rq.Pause(device="5060ti")
        )  # freeing would start nothing now: the offer goes from the reason
        wait_for(
            lambda: (
                "free-resident" not in (said := render(_task(client, task.id).reason)) and "paused" in said
            ),
            what="the reason to drop the question while the GPU is paused",
        )
        client.ask(rq.Resume(device="5060ti"))
        wait_for(
            lambda: "free-resident ollama" in render(_task(client, task.id).reason), what="the question back"
        )
        listed = gputray("residents", home=tmp_path / "home")  # the command line, as a user types it
        assert listed.returncode == 0, listed.stderr
        ollama_line = next(  # by its port: other tests on this machine may run Ollama stand-ins too
            line for line in listed.stdout.splitlines() if line.endswith(f", port {ollama.port}")
        )
        assert ollama_line.startswith("Ollama holds 12.0 GiB on GeForce RTX 5060 Ti · idle "), listed.stdout
        said = gputray("free-resident", "ollama", home=tmp_path / "home")
        assert said.returncode == 0 and said.stdout.startswith("asked Ollama (idle "), (
            said.stdout,
            said.stderr,
        )
        assert "POST /api/generate {model: qwen3:14b, keep_alive: 0}" in said.stdout
        ended = wait_for(
            lambda: (t := _task(client, task.id)).state == "succeeded" and t, what="the job to run"
        )
        generate = [c for c in ollama.calls() if c["path"] == "/api/generate"]
        assert generate == [
            {"method": "POST", "path": "/api/generate", "body": {"model": "qwen3:14b", "keep_alive": 0}}
        ]
        assert render(ended.reason).startswith("freed "), render(ended.reason)


def test_reload_after_loads_the_model_again_once_the_job_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    config = (
        '[[resident]]\nname = "Ollama"\nfree_when_idle = "always"\nidle_after = "0s"\nreload_after = true\n'
    )
    with (
        resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama,
        owner_with(tmp_path, monkeypatch, config) as (owner, client),
    ):
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="Ollama's 12 GiB on the simulated 5060 Ti")
        task = _needs_8_gib(client, tmp_path)
        wait_for(lambda: _task(client, task.id).state == "succeeded", what="the job to run in the room made")
        bodies = lambda: [call["body"] for call in ollama.calls() if call["path"] == "/api/generate"]  # noqa: E731
        wait_for(lambda: len(bodies()) == 2, what="Ollama asked to load its model again")
        assert bodies() == [{"model": "qwen3:14b", "keep_alive": 0}, {"model": "qwen3:14b"}]
        wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="its 12 GiB back on the 5060 Ti")


def test_two_residents_of_one_name_are_told_apart_by_their_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    """Two llama-servers (one per GPU, say): ``free-resident llama-server`` would be a guess, so it is
    refused, naming their ports; ``free-resident PORT`` asks that one only."""
    config = '[[resident]]\nname = "llama-server"\nidle_after = "0s"\n'
    with (
        resident(tmp_path, "llama-server", holds=holds, hold_gib=4) as first,
        resident(tmp_path, "llama-server", holds=holds, hold_gib=4) as second,
        owner_with(tmp_path, monkeypatch, config) as (_owner, client),
    ):
        ports = {first.port, second.port}
        wait_for(
            lambda: ports <= {r.port for r in client.ask(rq.Status()).residents}, what="both llama-servers"
        )
        guess = gputray("free-resident", "llama-server", home=tmp_path / "home")
        assert guess.returncode == 1 and "residents are named llama-server (" in guess.stdout, guess
        assert all(str(port) in guess.stdout for port in ports) and "name one by its port" in guess.stdout
        said = gputray("free-resident", str(second.port), home=tmp_path / "home")
        assert said.returncode == 0 and said.stdout.startswith("asked llama-server (idle "), said
        assert second.paths_called("POST") == ["/models/unload"] and first.paths_called("POST") == []


KEPT = "Ollama holds 12.0 GiB; you chose to keep waiting rather than free it for this task"
KEPT_JA = "このタスクのために解放せず待つことを選びました（`gputray free-resident ollama` で解放できます）"


def test_keep_waiting_is_the_tasks_own_and_outlives_the_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: Path
) -> None:
    """ "Keep waiting" (the tray's button, ``gputray edit ID --keep-waiting NAME``) is kept with the task
    (``kept_residents``): the owner stops asking about that resident for it, its reason says it waits by
    the user's choice, and a restarted owner still neither asks the user nor frees the resident for it;
    ``--keep-waiting none`` brings the question back."""
    config = '[[resident]]\nname = "Ollama"\nidle_after = "0s"\n'  # free_when_idle = "ask"
    home = tmp_path / "home"
    with resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama:
        with owner_with(tmp_path, monkeypatch, config) as (owner, client):
            wait_for(lambda: _nvidia_used(owner) > 12 * GIB, what="Ollama's 12 GiB on the simulated 5060 Ti")
            task = _needs_8_gib(client, tmp_path)
            wait_for(
                lambda: [q.task_id for q in client.ask(rq.Room()).questions] == [task.id], what="the question"
            )
            kept = gputray("edit", str(task.id), "--keep-waiting", "ollama", "--json", home=home)
            assert kept.returncode == 0, kept.stderr
            said = wait_for(
                lambda: KEPT in (words := render(_task(client, task.id).reason)) and words,
                what="the reason to say the user chose to wait",
            )
            assert "(`gputray free-resident ollama` still frees it)" in said, said
            assert client.ask(rq.Room()).questions == ()  # not asked about again
            listed = gputray("queue", home=home)
            assert "you chose to keep waiting rather than free it" in listed.stdout, listed.stdout
            again = gputray("edit", str(task.id), "--keep-waiting", "OLLAMA", "--json", home=home)
            assert again.returncode == 0, again.stderr
            assert _spec(client, task.id).kept_residents == ("ollama",)  # once, whatever its case
        with owner_with(tmp_path, monkeypatch, config) as (owner, client):  # the owner restarted
            make_room = owner.make_room
            assert make_room is not None
            wait_for(  # said by this owner (the stored reason is the last one's)
                lambda: any(n.startswith(f"#{task.id}: {KEPT}") for n in make_room.notices),
                what="the restarted owner to say the user chose to wait",
            )
            assert client.ask(rq.Room()).questions == () and make_room.questions == {}
            wait_for(
                lambda: render(_task(client, task.id).reason, "ja").endswith(KEPT_JA),
                what="its reason, in Japanese too",
            )
            assert ollama.paths_called("POST") == [] and _task(client, task.id).state == "waiting"
            back = gputray("edit", str(task.id), "--keep-waiting", "none", home=home)
            assert back.returncode == 0, back.stderr
            wait_for(
                lambda: [q.task_id for q in client.ask(rq.Room()).questions] == [task.id],
                what="the question back once the choice is cleared",
            )
            assert "free-resident ollama` frees it for this task" in render(_task(client, task.id).reason)


def _spec(client: ipc.IpcClient, task_id: int) -> TaskSpec:
    spec = client.ask(rq.Get(id=task_id)).spec
    assert spec is not None
    return spec
