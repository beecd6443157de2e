"""The bridge's loose ends (issue 22) on the submitting machine's side: a real queue, the real cluster
link, a real ``Bridge`` object; only Ray's handle is stood in for (``handle.x.remote(...)``, ``ray.get``),
answering as the other machine's agent answers.
"""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import task_steps as steps
from test_machine_tasks import Desk, _view

import gputray.cluster.bridge_base as bridge_module
from gputray.cluster.bridge_base import _Machine
from gputray.cluster.config import LOOPBACK_ENV
from gputray.cluster.wire import TaskChunk
from gputray.monitor.backends.simulated import RADEON_780M
from gputray.monitor.units import GIB
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskSpec

ROOT = Path(__file__).resolve().parents[2]


class _Agent:
    """The laptop's agent: its task #4 (our #N) with the log its own queue wrote, no result files."""

    def __init__(self, view: TaskView, log: bytes) -> None:
        self.view, self.log = view, log
        agent = self

        class task:
            @staticmethod
            def remote(remote_id: int, offset: int) -> TaskChunk:
                return TaskChunk(task=agent.view, log=agent.log[offset:], log_size=len(agent.log))

        class outputs:
            @staticmethod
            def remote(origin: str) -> list[tuple[str, int]]:
                return []

        class cleanup:
            @staticmethod
            def remote(origin: str) -> None:
                return None

        self.task, self.outputs, self.cleanup = task, outputs, cleanup


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    d = Desk(tmp_path)
    fake_ray = types.SimpleNamespace(get=lambda ref, timeout=None: ref)
    monkeypatch.setattr(bridge_module, "ray", lambda: fake_ray)
    yield d
    d.close()


def _handed(
    desk: Desk, tmp_path: Path, agent: _Agent, argv: tuple[str, ...] = ("python3", "-c", "pass")
) -> int:
    """A task of ours the laptop runs as its #4, with its (empty) local log as the bridge makes it."""
    spec = TaskSpec(kind="command", name="remote job", argv=argv, machine="laptop", cwd=str(tmp_path))
    rec = desk.queue.submit(spec)
    log_path = tmp_path / "task-local.log"
    log_path.write_bytes(b"")
    steps.hand_over(desk.store, rec.id, "laptop", 4, remote_state="waiting", log_path=str(log_path))
    b = desk.bridge
    b.connected, b.gcs_ok_mono = True, time.monotonic()
    b.machines["laptop"] = _Machine(last_contact=time.time(), handle=agent)
    b._ask = desk.link.update  # type: ignore[assignment,method-assign]  # the owner, in this process
    return rec.id


def test_a_remote_task_that_ended_between_two_looks_still_gets_its_start_time(
    desk: Desk, tmp_path: Path
) -> None:
    started, ended = time.time() - 5, time.time() - 1
    view = TaskView(id=4, state="succeeded", exit_code=0, started_at=started, ended_at=ended, log_path=None)
    task_id = _handed(desk, tmp_path, _Agent(view, b""))
    desk.bridge._follow(desk.queue.get(task_id))  # the bridge never saw it running there
    row = desk.queue.get(task_id)
    assert row.state == "succeeded" and row.started_at == pytest.approx(started)
    assert row.ended_at == pytest.approx(ended)


def test_the_log_here_names_this_machines_task_id_and_streams_on_from_the_right_place(
    desk: Desk, tmp_path: Path
) -> None:
    header = b"=== gputray task #4 'remote job', attempt 1, on Radeon 780M (pci:0000:64:00.0)\n"
    agent = _Agent(TaskView(id=4, state="running", started_at=time.time()), header + b"step 0\n")
    task_id = _handed(desk, tmp_path, agent)
    desk.bridge._follow(desk.queue.get(task_id))
    agent.log += b"step 1\n"
    desk.bridge._follow(desk.queue.get(task_id))
    agent.log += b"step 2\n"
    agent.view = msgspec.structs.replace(agent.view, state="succeeded", exit_code=0, ended_at=time.time())
    desk.bridge._follow(desk.queue.get(task_id))
    text = (tmp_path / "task-local.log").read_text()
    assert text.startswith(f"=== gputray task #{task_id} (#4 on laptop) 'remote job', attempt 1, on Radeon")
    assert "step 0\nstep 1\nstep 2\n" in text and text.count("step") == 3  # nothing twice, nothing lost
    assert desk.queue.get(task_id).state == "succeeded"


def test_status_cluster_shows_a_paused_machines_gpus_as_paused(desk: Desk) -> None:
    desk.report()
    b = desk.bridge
    view = _view("laptop", RADEON_780M, ram_total_bytes=32 * GIB)
    b.machines["laptop"].view = msgspec.structs.replace(view, queue_paused=True)  # `gputray pause` there
    (gpu,) = [d for m in b.report().machines if m.name == "laptop" for d in m.devices]
    assert gpu.paused is True and render(gpu.reasons[0]) == "the queue is paused on laptop"
    paused = tuple(msgspec.structs.replace(d, paused=True) for d in view.devices)
    b.machines["laptop"].view = msgspec.structs.replace(view, devices=paused)  # `pause --device 780m` there
    (gpu,) = [d for m in b.report().machines if m.name == "laptop" for d in m.devices]
    assert gpu.paused is True and render(gpu.reasons[0]) == "paused on laptop"


def test_the_docs_name_the_setting_that_keeps_ray_on_loopback() -> None:
    assert LOOPBACK_ENV == "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    assert f"{LOOPBACK_ENV}=0" in (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")


def test_a_run_jobs_log_comes_back_beside_its_input_named_after_it(desk: Desk, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "upscale.py").write_text("print('hi')\n")
    view = TaskView(id=4, state="succeeded", exit_code=0, started_at=time.time(), ended_at=time.time())
    task_id = _handed(desk, tmp_path, _Agent(view, b"hi\n"), argv=("python3", "sub/upscale.py"))
    desk.bridge._follow(desk.queue.get(task_id))
    assert (tmp_path / "sub" / "upscale.log").read_text().startswith("hi\n")  # beside it, as sub/upscale.log
    assert not (tmp_path / "upscale.log").exists()
