"""One machine's view, as its own owner sees it: asked over the local socket (``status``, ``queue``)
plus what the GPU doctor's cache says. Runs in the bridge (its own machine) and in the agent."""

from __future__ import annotations

import time
from typing import Any

from gputray.cluster.wire import DeviceView, InboundTask, MachineView
from gputray.scheduler import ipc

CPU_KEY = "cpu"


def _doctor_verdicts(keys: list[tuple[str, str]]) -> dict[str, tuple[tuple[str, ...], bool | None]]:
    """key → (needs that failed there, torch works there or None), from the doctor's cache only."""
    try:
        from gputray.scheduler import doctor
        from gputray.scheduler.doctor_cache import DoctorNeeds

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


def local_view(client: ipc.IpcClient, machine: str, *, now_s: float | None = None) -> MachineView:
    """Ask this machine's owner. Raises ipc.IpcError when it does not answer."""
    status = client.request("status")
    listing = client.request("queue")
    snap: dict[str, Any] = status.get("snapshot") or {}
    verdicts = {d["key"]: d for d in status.get("devices") or ()}
    paused: dict[str, bool] = status.get("paused") or {}
    running: dict[str, list[str]] = {}
    inbound: list[InboundTask] = []
    for t in listing.get("tasks") or ():
        if t.get("state") == "running" and t.get("device"):
            running.setdefault(t["device"], []).append(f"{t['name']} (#{t['id']})")
        if t.get("origin") and t.get("state") not in ("succeeded", "failed", "cancelled"):
            inbound.append(InboundTask(int(t["id"]), str(t["origin"]), str(t["state"])))
    raw = list(snap.get("devices") or ())
    doctor = _doctor_verdicts([(d["key"], d.get("vendor", "other")) for d in raw] + [(CPU_KEY, "cpu")])
    devices = []
    for d in raw:
        key = d["key"]
        v = verdicts.get(key, {})
        failed, torch_ok = doctor.get(key, ((), None))
        devices.append(
            DeviceView(
                key=key,
                name=d["name"],
                vendor=d.get("vendor", "other"),
                kind=d.get("kind", "other"),
                pci_bdf=d.get("pci_bdf"),
                state=d.get("state", "ok"),
                reason=d.get("reason"),
                util_percent=d.get("util_percent"),
                temp_c=d.get("temp_c"),
                power_w=d.get("power_w"),
                vram_used_bytes=d.get("vram_used_bytes"),
                vram_total_bytes=d.get("vram_total_bytes"),
                shared_used_bytes=d.get("shared_used_bytes"),
                shared_total_bytes=d.get("shared_total_bytes"),
                sclk_mhz=d.get("sclk_mhz"),
                mclk_mhz=d.get("mclk_mhz"),
                busy=v.get("busy"),
                reasons=tuple(v.get("reasons") or ()),
                running=len(running.get(key, ())),
                running_names=tuple(running.get(key, ())),
                paused=bool(paused.get(key)),
                failed_needs=failed,
                torch_ok=torch_ok,
                simulated=bool(v.get("simulated")),
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
            paused=bool(paused.get(CPU_KEY)),
            failed_needs=failed,
            torch_ok=torch_ok,
        )
    )
    host = snap.get("host") or {}
    return MachineView(
        machine=machine,
        taken_at_s=time.time() if now_s is None else now_s,
        devices=tuple(devices),
        ram_used_bytes=host.get("ram_used_bytes"),
        ram_total_bytes=host.get("ram_total_bytes"),
        queue_paused=bool(paused.get("queue")),
        demo=bool(status.get("demo")),
        inbound=tuple(inbound),
        gputray_pid=status.get("pid"),
    )
