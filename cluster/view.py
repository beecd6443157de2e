"""One machine's view, as its own owner sees it: asked over the local socket (``status``, ``queue``)
plus what the GPU doctor's cache says. Runs in the bridge (its own machine) and in the agent."""

from __future__ import annotations

import dataclasses
import time

from gputray.cluster.wire import DeviceView, InboundTask, MachineView
from gputray.monitor.records import DeviceInfo, Sample
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import QueueReply, StatusReply

CPU_KEY = "cpu"


def _doctor_verdicts(keys: list[tuple[str, str]]) -> dict[str, tuple[tuple[str, ...], bool | None]]:
    """key → (needs that failed there, torch works there or None), from the doctor's cache only."""
    try:
        from gputray.scheduler.client import doctor as doctor
        from gputray.scheduler.cluster_port.shared import DoctorNeeds

        pairs = doctor.cached_results()
        failed_needs = DoctorNeeds()
        words = frozenset(doctor.NEEDS)
    except Exception:  # the doctor's cache must never stop the cluster view
        return {}
    out: dict[str, tuple[tuple[str, ...], bool | None]] = {}
    for key, _vendor in keys:
        mine = [p for p in pairs if p.device_key == key or (key == CPU_KEY and p.vendor == "cpu")]
        torch_ok = None if not mine else any(p.works for p in mine)
        try:
            failed = tuple(sorted(failed_needs(key, words)))
        except Exception:
            failed = ()
        out[key] = (failed, torch_ok)
    return out


def _with_totals(sample: Sample, info: DeviceInfo) -> Sample:
    """``sample`` with the device's own VRAM and shared totals where the sample reads none."""
    return dataclasses.replace(
        sample,
        vram_total_bytes=sample.vram_total_bytes
        if sample.vram_total_bytes is not None
        else info.vram_total_bytes,
        shared_total_bytes=(
            sample.shared_total_bytes if sample.shared_total_bytes is not None else info.shared_total_bytes
        ),
    )


def local_view(client: ipc.IpcClient, machine: str, *, now_s: float | None = None) -> MachineView:
    """Ask this machine's owner. Raises ipc.IpcError when it does not answer."""
    status: StatusReply = client.ask(rq.Status())
    listing: QueueReply = client.ask(rq.Queue())
    readings = status.snapshot.readings if status.snapshot is not None else ()
    verdicts = {d.key: d for d in status.devices}
    paused = status.paused.devices
    running: dict[str, list[str]] = {}
    inbound: list[InboundTask] = []
    for t in listing.tasks:
        if t.state == "running" and t.device:
            running.setdefault(t.device, []).append(f"{t.name} (#{t.id})")
        if t.origin and t.state not in ("succeeded", "failed", "cancelled"):
            inbound.append(InboundTask(t.id, t.origin, t.state))
    doctor = _doctor_verdicts([(r.info.key, r.info.vendor) for r in readings] + [(CPU_KEY, "cpu")])
    devices = []
    for r in readings:
        info, sample = r.info, r.sample
        key = info.key
        v = verdicts.get(key)
        failed, torch_ok = doctor.get(key, ((), None))
        devices.append(
            DeviceView(
                key=key,
                name=info.name,
                vendor=info.vendor,
                kind=info.kind,
                pci_bdf=info.pci_bdf,
                reading=_with_totals(sample, info),
                busy=v.busy if v else None,
                reasons=v.reasons if v else (),
                running=len(running.get(key, ())),
                running_names=tuple(running.get(key, ())),
                paused=key in paused,
                failed_needs=failed,
                torch_ok=torch_ok,
                simulated=bool(v and v.simulated),
            )
        )
    failed, torch_ok = doctor.get(CPU_KEY, ((), None))
    devices.append(
        DeviceView(
            key=CPU_KEY,
            name="CPU",
            vendor="other",
            kind="cpu",
            running=len(running.get(CPU_KEY, ())),
            running_names=tuple(running.get(CPU_KEY, ())),
            paused=CPU_KEY in paused,
            failed_needs=failed,
            torch_ok=torch_ok,
        )
    )
    host = status.snapshot.host if status.snapshot is not None else None
    return MachineView(
        machine=machine,
        taken_at_s=time.time() if now_s is None else now_s,
        devices=tuple(devices),
        ram_used_bytes=host.ram_used_bytes if host is not None else None,
        ram_total_bytes=host.ram_total_bytes if host is not None else None,
        queue_paused=status.paused.all,
        demo=status.demo,
        inbound=tuple(inbound),
        gputray_pid=status.pid,
    )
