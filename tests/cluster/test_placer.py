"""Placement across machines: the queue's own placement over every machine's view (no Ray needed)."""

from __future__ import annotations

import msgspec

from gputray.cluster.placer import handed_prefs, place_all
from gputray.cluster.wire import DeviceView, MachineView
from gputray.monitor.busy_why import Words
from gputray.monitor.records import Sample
from gputray.monitor.units import GIB
from gputray.scheduler.queue.placement import GiveUp, Placement, Wait
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

NOW = 1_000_000.0
GTI = DeviceView(
    key="pci:0000:01:00.0",
    name="GeForce RTX 5060 Ti",
    vendor="nvidia",
    kind="discrete",
    reading=Sample(
        key="pci:0000:01:00.0",
        timestamp_s=NOW,
        vram_used_bytes=15 * GIB,
        vram_total_bytes=16 * GIB,
        util_percent=96.0,
    ),
    busy=True,
    reasons=(Words(text="GeForce RTX 5060 Ti is busy: llama-server holds 14.0 GiB and is active"),),
)
IGPU = DeviceView(
    key="pci:0000:64:00.0",
    name="Radeon 780M",
    vendor="amd",
    kind="integrated",
    reading=Sample(
        key="pci:0000:64:00.0",
        timestamp_s=NOW,
        vram_used_bytes=1 * GIB,
        vram_total_bytes=4 * GIB,
        shared_used_bytes=0,
        shared_total_bytes=29 * GIB,
    ),
    busy=False,
)
CPU = DeviceView(key="cpu", name="CPU", vendor="other", kind="cpu")


def views(**devices: tuple[DeviceView, ...]) -> dict[str, MachineView]:
    return {
        m: MachineView(m, NOW, devs, ram_used_bytes=4 * GIB, ram_total_bytes=32 * GIB)
        for m, devs in devices.items()
    }


def task(task_id: int = 1, **spec: object) -> TaskRecord:
    fields: dict[str, object] = {
        "kind": "command",
        "name": f"job{task_id}",
        "argv": ("run",),
        "machine": "any",
    }
    fields.update(spec)
    return TaskRecord(task_id, TaskSpec(**fields), "queued", NOW - 5, queued_at=NOW - 5)  # type: ignore[arg-type]


def everywhere(_: TaskRecord) -> list[str]:
    return ["desk", "laptop"]


def test_a_task_goes_to_the_other_machine_whose_gpu_is_really_free() -> None:
    v = views(desk=(GTI, CPU), laptop=(IGPU, CPU))
    (d,) = place_all(
        [task(device_prefs=("5060ti", "780m"), on_busy="redirect")],
        v,
        local="desk",
        now_s=NOW,
        allowed=everywhere,
    )
    assert isinstance(d.decision, Placement)
    assert (d.machine, d.device_key) == ("laptop", "pci:0000:64:00.0")
    assert "llama-server" in render(d.decision.reason) and "Radeon 780M on laptop" in render(
        d.decision.reason
    )


def test_wait_keeps_waiting_for_the_busy_gpu_with_the_reason_of_its_machine() -> None:
    v = views(desk=(GTI, CPU), laptop=(IGPU, CPU))
    (d,) = place_all(
        [task(device_prefs=("5060ti",), on_busy="wait")], v, local="desk", now_s=NOW, allowed=everywhere
    )
    assert isinstance(d.decision, Wait)
    assert "llama-server" in render(d.decision.reason) and "on desk" in render(d.decision.reason)


def test_each_placement_takes_its_slot_so_a_second_task_waits() -> None:
    v = views(desk=(GTI, CPU), laptop=(IGPU, CPU))
    first, second = place_all(
        [task(1, device_prefs=("780m",)), task(2, device_prefs=("780m",))],
        v,
        local="desk",
        now_s=NOW,
        allowed=everywhere,
    )
    assert isinstance(first.decision, Placement) and first.machine == "laptop"
    assert isinstance(second.decision, Wait) and "job1 (#1)" in render(second.decision.reason)


def test_a_torch_job_only_goes_where_some_env_works_per_the_doctor() -> None:
    broken = msgspec.structs.replace(IGPU, torch_ok=False)
    v = views(desk=(GTI, CPU), laptop=(broken, CPU))
    t = task(kind="torch", script="train.py", argv=(), device_prefs=("780m",))
    (d,) = place_all([t], v, local="desk", now_s=NOW, allowed=everywhere)
    assert isinstance(d.decision, GiveUp) and "lacks torch" in render(d.decision.reason)
    fine = msgspec.structs.replace(IGPU, torch_ok=True)
    (d,) = place_all(
        [t], views(desk=(GTI, CPU), laptop=(fine, CPU)), local="desk", now_s=NOW, allowed=everywhere
    )
    assert isinstance(d.decision, Placement) and d.machine == "laptop"


def test_a_need_the_doctor_saw_fail_keeps_a_job_off_that_machine() -> None:
    no_fp16 = msgspec.structs.replace(IGPU, failed_needs=("fp16",))
    v = views(desk=(GTI, CPU), laptop=(no_fp16, CPU))
    (d,) = place_all(
        [task(device_prefs=("780m",), needs=("fp16",))], v, local="desk", now_s=NOW, allowed=everywhere
    )
    assert isinstance(d.decision, GiveUp) and "fp16" in render(d.decision.reason)


def test_a_task_bound_to_a_machine_takes_its_bare_device_keys_as_that_machines() -> None:
    v = views(desk=(GTI, CPU), laptop=(IGPU, CPU))
    t = task(machine="laptop", device_prefs=("pci:0000:64:00.0",))
    (d,) = place_all([t], v, local="desk", now_s=NOW, allowed=lambda _: ["laptop"])
    assert isinstance(d.decision, Placement) and (d.machine, d.device_key) == ("laptop", "pci:0000:64:00.0")
    (gone,) = place_all([t], views(desk=(GTI, CPU)), local="desk", now_s=NOW, allowed=lambda _: ["laptop"])
    assert isinstance(gone.decision, Wait) and "not present" in render(gone.decision.reason)


def test_a_paused_queue_on_the_other_machine_takes_nothing() -> None:
    v = views(desk=(GTI, CPU), laptop=(IGPU, CPU))
    v["laptop"] = MachineView("laptop", NOW, (IGPU, CPU), queue_paused=True)
    (d,) = place_all([task(device_prefs=("780m",))], v, local="desk", now_s=NOW, allowed=everywhere)
    assert isinstance(d.decision, Wait) and "paused" in render(d.decision.reason)


def test_the_handed_task_prefers_the_chosen_device_in_that_machines_terms() -> None:
    prefs = ("desk/pci:0000:01:00.0", "laptop/pci:0000:64:00.0", "780m", "cpu")
    assert handed_prefs(prefs, "laptop", "pci:0000:64:00.0") == ("pci:0000:64:00.0", "780m", "cpu")
