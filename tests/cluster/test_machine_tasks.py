"""Tasks with ``--machine`` on the submitting machine's side (no Ray): their devices and ``--vram``
are checked at submit against the cluster view the bridge reports, their dependencies hold them until
they may start, and ``wait`` on one answers as soon as the bridge records its end.

One real queue (simulated GPUs: desk has the GeForce RTX 5060 Ti, its 780M off the bus), the real
cluster link beside it, and the report a real ``Bridge`` object writes from the machines' views (the
laptop: a Radeon 780M); the bridge's Ray side is not started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import task_steps as steps
import tomli_w
from waiting import wait_for

from gputray.cluster.bridge import Bridge
from gputray.cluster.bridge_base import _Machine
from gputray.cluster.config import load_cluster_config
from gputray.cluster.link import ClusterLink
from gputray.cluster.submit_checks import check_machine_task
from gputray.cluster.wire import DeviceView, MachineView
from gputray.monitor.backends.simulated import RADEON_780M, SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo, Sample
from gputray.monitor.scenario import Load, Scenario
from gputray.monitor.units import GIB
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.cluster_side import ClusterSide
from gputray.scheduler.queue.device_checks import SubmitRefused
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

RAM = 64 * GIB
LAPTOP_RAM = 32 * GIB


def _view(machine: str, *infos: DeviceInfo, ram_total_bytes: int) -> MachineView:
    devices = tuple(
        DeviceView(
            key=i.key,
            name=i.name,
            vendor=i.vendor,
            kind=i.kind,
            pci_bdf=i.pci_bdf,
            reading=Sample(
                key=i.key,
                timestamp_s=time.time(),
                vram_total_bytes=i.vram_total_bytes,
                shared_total_bytes=i.shared_total_bytes,
            ),
            busy=False,
        )
        for i in infos
    )
    cpu = DeviceView(key="cpu", name="CPU", vendor="other", kind="cpu")
    return MachineView(machine, time.time(), (*devices, cpu), ram_total_bytes // 2, ram_total_bytes)


class Desk:
    """The submitting machine: its queue and cluster link, and its bridge's report."""

    def __init__(self, tmp_path: Path) -> None:
        self.paths = Paths(tmp_path / "config", tmp_path / "data", tmp_path / "state", tmp_path / "run")
        self.paths.config_dir.mkdir(parents=True)
        cluster = {"address": "127.0.0.1:6379", "machine": "desk"}
        self.paths.config_file.write_text(tomli_w.dumps({"cluster": cluster}), encoding="utf-8")
        self.store = TaskStore(self.paths.queue_db)
        self.link = ClusterLink(self.paths)
        gone = Load("780m", 0, 1e9, 0, state="gone")
        self.monitor = Monitor([SimulatedBackend(Scenario((gone,)))], host=HostReader())
        self.monitor.sample_once()
        self.queue = QueueService(self.store, self.monitor, paths=self.paths, cluster=self.link)
        self.link.attach(ClusterSide(self.queue))
        config = load_cluster_config(self.paths.config_file)
        self.bridge = Bridge(self.paths, config, None, key=self.link.bridge_key)

    def report(self, laptop: str | None = "online", oldbox: bool = False, head_up: bool = True) -> None:
        """What the bridge tells the owner: desk as it sees itself; the laptop "online", "away" or not
        known (None); ``oldbox``: a machine seen long ago, away now."""
        b = self.bridge
        b.connected, b.gcs_ok_mono = True, time.monotonic() - (0 if head_up else 60)
        b.local_view = _view("desk", *[r.info for r in self.monitor.latest.readings], ram_total_bytes=RAM)
        if laptop is not None:
            view = _view("laptop", RADEON_780M, ram_total_bytes=LAPTOP_RAM)
            b.machines["laptop"] = _Machine(last_contact=time.time(), view=view)
            if laptop == "away":
                b.machines["laptop"].left_at = time.time()
        if oldbox:
            b.machines["oldbox"] = _Machine(last_contact=time.time() - 3600, left_at=time.time() - 3600)
        self.link.sync(rq.ClusterSync(report=b.report(), bridge_key=self.link.bridge_key))

    def synced(self) -> list[int]:
        """The task ids the owner hands the bridge to place or follow."""
        return [t.id for t in self.link.sync(rq.ClusterSync(bridge_key=self.link.bridge_key)).tasks]

    def step(self, rec: TaskRecord, step: remote.ClusterStep) -> TaskRecord | None:
        """What the bridge writes, as it writes it: one step, with this owner's key."""
        return self.link.update(rq.ClusterUpdate(id=rec.id, step=step, bridge_key=self.link.bridge_key)).task

    def close(self) -> None:
        self.queue.close(kill_running=True)
        self.store.close()


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    d = Desk(tmp_path)
    yield d
    d.close()


def job(name: str = "job", **fields: object) -> TaskSpec:
    return TaskSpec(kind="command", name=name, argv=("python3", "-c", "pass"), **fields)  # type: ignore[arg-type]


def refusal(desk: Desk, **fields: object) -> str:
    with pytest.raises(SubmitRefused) as err:
        desk.queue.submit(job(**fields))
    return str(err.value)


def test_a_task_for_one_machine_is_checked_against_that_machines_devices(desk: Desk) -> None:
    desk.report()
    assert refusal(desk, machine="laptop", device_prefs=("5060ti",)) == (
        "job: no device on laptop matches '5060ti'; known: Radeon 780M (780m, pci:0000:64:00.0), cpu "
        "— see `gputray status --cluster`"
    )
    assert refusal(desk, machine="laptop", device_prefs=("780", "7800xt")).startswith(
        "job: no device on laptop matches '7800xt'; closest: Radeon 780M (780m); known: "
    )
    # the 780M's whole memory there is its 4 GiB carve-out and 29.3 GiB GTT
    assert refusal(desk, machine="laptop", device_prefs=("780m",), vram_bytes=40 * GIB) == (
        "job: memory asks 40.0 GiB; the largest allowed device on laptop, Radeon 780M, has 33.3 GiB"
    )
    assert refusal(desk, machine="laptop", device_prefs=("cpu",), vram_bytes=40 * GIB) == (
        "job: memory asks 40.0 GiB; the largest allowed device on laptop, the CPU (RAM), has 32.0 GiB"
    )
    for fine in (("780m",), ("pci:0000:64:00.0",), ("laptop/pci:0000:64:00.0",), ("amd", "cpu")):
        desk.queue.submit(job(machine="laptop", device_prefs=fine, vram_bytes=8 * GIB))
    # this machine's own name: its own devices, with the message of a local task
    assert refusal(desk, machine="desk", device_prefs=("780m",)).startswith(
        "job: no device matches '780m'; known: GeForce RTX 5060 Ti (5060ti, pci:0000:01:00.0), cpu — see "
    )


def test_a_task_for_any_machine_is_checked_against_every_machines_devices(desk: Desk) -> None:
    desk.report()
    desk.queue.submit(job(machine="any", device_prefs=("5060ti", "780m"), on_busy="redirect"))
    assert refusal(desk, machine="any", device_prefs=("4090",)) == (
        "job: no device on any machine matches '4090'; closest: GeForce RTX 5060 Ti (5060ti); known: "
        "GeForce RTX 5060 Ti (5060ti, desk/pci:0000:01:00.0), Radeon 780M (780m, laptop/pci:0000:64:00.0), "
        "cpu — see `gputray status --cluster`"
    )
    assert refusal(desk, machine="any", device_prefs=("gpu",), on_busy="redirect", vram_bytes=40 * GIB) == (
        "job: memory asks 40.0 GiB; the largest allowed device on any machine, Radeon 780M on laptop, "
        "has 33.3 GiB"
    )
    desk.queue.submit(job(machine="any", device_prefs=("780m",), vram_bytes=20 * GIB))  # fits the laptop's


def test_any_machine_before_this_machines_first_reading_counts_its_reported_devices(desk: Desk) -> None:
    """Right after the owner starts (no reading of its own yet), desk's GPU is still in the bridge's
    report: `--machine any --device 5060ti` was refused as matching only the laptop's 780M."""
    desk.report()
    view = desk.link.cluster_view()
    spec = job(machine="any", device_prefs=("5060ti",))
    check_machine_task(spec, local="desk", local_devices=None, cluster=view)  # not refused
    with pytest.raises(SubmitRefused, match="no device on any machine matches '4090'"):
        check_machine_task(
            job(machine="any", device_prefs=("4090",)), local="desk", local_devices=None, cluster=view
        )


def test_a_machine_never_seen_is_refused_one_away_now_is_not_checked(desk: Desk) -> None:
    desk.report(laptop="away", oldbox=True)
    assert refusal(desk, machine="lapto") == (
        "job: --machine lapto: no machine of that name in the cluster; closest: laptop; machines: desk, "
        "laptop, oldbox — see `gputray cluster status`"
    )
    # away now: nothing here knows its devices, so the task is taken and waits for the machine
    desk.queue.submit(job(machine="oldbox", device_prefs=("4090",)))
    desk.queue.submit(job(machine="laptop", device_prefs=("4090",)))
    # any machine, with one away: that one may have it (desk has no 780M)
    desk.queue.submit(job(machine="any", device_prefs=("780m",), on_busy="cpu"))


def test_any_machine_where_no_other_is_known_is_this_machine(desk: Desk) -> None:
    desk.report(laptop=None)
    assert refusal(desk, machine="any", device_prefs=("780m",)).startswith("job: no device matches '780m'")


def test_without_a_connected_bridge_a_task_for_another_machine_is_taken_unchecked(desk: Desk) -> None:
    desk.queue.submit(job(machine="laptop", device_prefs=("4090",)))  # no report yet
    desk.report(head_up=False)  # the Ray head is down: "any" may yet mean the laptop
    desk.queue.submit(job(machine="any", device_prefs=("780m",), on_busy="cpu"))
    desk.queue.submit(job(machine="laptop", device_prefs=("4090",)))


def test_dependencies_hold_a_task_for_another_machine_until_they_allow_it(desk: Desk) -> None:
    desk.report()
    later = time.time() + 3600
    first = desk.queue.submit(job("first", device_prefs=("cpu",), start_at=later))
    remote_first = desk.queue.submit(job("remote first", machine="laptop", device_prefs=("780m",)))
    after_local = desk.queue.submit(job("after local", machine="laptop", after=(first.id,)))
    after_remote = desk.queue.submit(job("after remote", machine="any", after=(remote_first.id,)))
    desk.queue.dispatch()

    # held: the bridge is not given them to place, and the local queue says why they wait
    assert desk.synced() == [remote_first.id]
    held = desk.queue.get(after_local.id)
    assert held.state == "waiting" and render(held.reason).startswith(f"waits for #{first.id} 'first' (")

    # the task on the laptop ends (the bridge records it in its row here): its dependant may go
    steps.run_there(desk.store, remote_first.id, "laptop", 7)
    ended = remote.RemoteRun(
        into="succeeded", exit_code=0, remote_state="fetched", energy_j=420.5, reason=Said(text="done")
    )
    desk.step(remote_first, ended)
    assert desk.synced() == [after_remote.id]
    assert desk.queue.get(remote_first.id).energy_j == 420.5  # the GPU energy measured on the laptop

    # the local one is cancelled: the task after it fails, and never goes to the laptop
    desk.queue.cancel(first.id)
    desk.queue.dispatch()
    failed = desk.queue.get(after_local.id)
    assert failed.state == "failed" and render(failed.reason).startswith(
        f"dependency #{first.id} 'first' cancelled"
    )
    assert after_local.id not in desk.synced()


def test_wait_on_a_task_another_machine_runs_answers_when_the_bridge_records_its_end(desk: Desk) -> None:
    rec = desk.queue.submit(job(machine="laptop"))
    steps.run_there(desk.store, rec.id, "laptop", 7)
    answers: list[list[TaskRecord | int]] = []
    waiter = threading.Thread(target=lambda: answers.append(desk.queue.edits.wait_ended([rec.id], 600)))
    waiter.start()
    time.sleep(0.5)  # (only so that it waits before the end comes; the test passes either way)
    ended = remote.RemoteRun(
        into="failed", exit_code=3, ended_at=time.time(), remote_state="fetched", reason=Said(text="exit 3")
    )
    desk.step(rec, ended)
    wait_for(lambda: answers, 60, "wait_ended to answer (it waits up to 600 s for a change)")
    (got,) = answers[0]
    assert isinstance(got, TaskRecord) and got.state == "failed" and got.exit_code == 3
    waiter.join()


class _OldAgent:
    """The laptop's agent as a gputray before protocol 2 answers ``task``: a dict with ISO times (Ray's
    handle stood in for at the library boundary: ``handle.task.remote(...)`` and ``ray.get``)."""

    class task:
        @staticmethod
        def remote(remote_id: int, offset: int) -> dict[str, object]:
            old = {"id": remote_id, "state": "running", "started_at": "2026-12-02T04:00:00Z"}
            return {"task": old, "log": b"", "log_size": 0}


def test_an_agent_of_another_version_is_named_once_and_its_tasks_left_alone(
    desk: Desk, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import types

    import gputray.cluster.bridge_base as bridge_module

    rec = desk.queue.submit(job(machine="laptop"))
    steps.run_there(desk.store, rec.id, "laptop", 7)
    fake_ray = types.SimpleNamespace(get=lambda ref, timeout=None: ref)
    monkeypatch.setattr(bridge_module, "ray", lambda: fake_ray)
    b = desk.bridge
    b.connected, b.gcs_ok_mono = True, time.monotonic()
    b.machines["laptop"] = _Machine(last_contact=time.time(), handle=_OldAgent())
    with caplog.at_level("WARNING", logger="gputray"):
        for _ in range(3):  # each bridge step follows it again: no exception, one warning
            b._follow(desk.queue.get(rec.id))
    warned = [r.getMessage() for r in caplog.records if "another gputray version" in r.getMessage()]
    assert warned == [
        "laptop runs another gputray version (its tasks come in another version's shape): its GPUs are "
        "not shown and its tasks are not followed until every machine runs the same one (docs/cluster.md)"
    ]
    assert desk.queue.get(rec.id).state == "running" and desk.queue.get(rec.id).remote_state == "running"
