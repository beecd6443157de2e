"""Submit-time checks of a task with ``--machine``, against the cluster view the bridge last reported.

``--machine laptop``: its device names and ``--vram`` are checked against the laptop's devices as the
laptop reports them (its own keys, ``pci:…``, or ``laptop/pci:…``); ``--machine any``: against every
machine's devices together, this machine's devices seen before included (keys ``desk/pci:…``, as the
bridge's placement names them). The messages are ``device_checks``' own, saying where they looked. A
machine name the cluster has never seen is refused with the closest name. What cannot be known is not
refused: a task for a machine away now (nothing here knows its devices: the task waits for it), or for
``any`` while some machine is away (it may have the device), or before the bridge's first report.

Pure functions: the link hands in the bridge's report and this machine's own devices.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence

from gputray.cluster.wire import DeviceView, MachineView, qualified
from gputray.scheduler.cluster_port.records import ClusterReport, TaskSpec
from gputray.scheduler.cluster_port.shared import (
    DeviceState,
    SeenDevice,
    SubmitRefused,
    check_device_names,
    check_memory,
)

SEE = "gputray status --cluster"
CPU_VIEW = DeviceView(key="cpu", name="CPU", vendor="other", kind="cpu")


@dataclasses.dataclass(frozen=True)
class ClusterView:
    """What the bridge last reported: the machines online now (with their devices, the CPU included)
    and every machine name it knows (those away now too)."""

    online: Mapping[str, MachineView]
    known: frozenset[str]


def view_from_report(report: ClusterReport) -> ClusterView:
    """The bridge's report (``Bridge.report``: GPUs without the CPU) as views."""
    online = {
        m.name: MachineView(
            machine=m.name,
            taken_at_s=report.at,
            devices=(*m.devices, CPU_VIEW),
            ram_total_bytes=m.ram_total_bytes,
        )
        for m in report.machines
        if m.alive
    }
    return ClusterView(online, frozenset(m.name for m in report.machines))


def _state(d: DeviceView, key: str, name: str, ram_total_bytes: int | None) -> DeviceState:
    return DeviceState(info=d.info(key, name), host_ram_total_bytes=ram_total_bytes)


def _with_machine(d: DeviceState, machine: str) -> DeviceState:
    """The same device named ``Radeon 780M on laptop`` (``CPU on laptop``), for messages across machines."""
    return dataclasses.replace(d, info=dataclasses.replace(d.info, name=f"{d.name} on {machine}"))


def check_machine_task(
    spec: TaskSpec,
    *,
    local: str,
    local_devices: tuple[Sequence[DeviceState], Sequence[SeenDevice]] | None,
    cluster: ClusterView,
) -> None:
    """Refuse (SubmitRefused) a ``--machine`` task whose devices or memory cannot be right there.

    ``local_devices``: this machine's devices present now (the CPU included) and seen before; a task
    for this machine itself is the queue's own check (``device_checks.check_submit``), not this one.
    """
    wanted = spec.machine
    if wanted is None or wanted == local:
        return
    if wanted == "any":
        _check_anywhere(spec, local, local_devices, cluster)
        return
    view = cluster.online.get(wanted)
    if view is None:
        if cluster.known and wanted not in cluster.known:
            raise SubmitRefused(_unknown_machine(spec.name, wanted, cluster.known))
        return  # away now: its devices are not known here; the task waits for it
    prefix = f"{wanted}/"
    prefs = tuple(p[len(prefix) :] if p.lower().startswith(prefix.lower()) else p for p in spec.device_prefs)
    theirs = spec.replace(device_prefs=prefs)
    devices = [_state(d, d.key, d.name, view.ram_total_bytes) for d in view.devices]
    check_device_names(theirs, devices, where=f" on {wanted}", see=SEE)
    check_memory(theirs, devices, where=f" on {wanted}")


def _check_anywhere(
    spec: TaskSpec,
    local: str,
    local_devices: tuple[Sequence[DeviceState], Sequence[SeenDevice]] | None,
    cluster: ClusterView,
) -> None:
    if not cluster.online or cluster.known - set(cluster.online):
        return  # no report yet, or a machine away now: it may have what the task asks for
    devices: list[tuple[str, DeviceState]] = []
    if local_devices is not None:
        present, seen = local_devices
        here = {d.key for d in present}
        absent = [DeviceState(info=s.info()) for s in seen if s.key not in here]
        for d in (*present, *absent):
            info = dataclasses.replace(d.info, key=qualified(local, d.key))
            devices.append((local, dataclasses.replace(d, info=info)))
    for machine, view in sorted(cluster.online.items()):
        # this machine as the report has it only before its own first reading (right after start)
        if machine != local or local_devices is None:
            devices.extend(
                (machine, _state(d, qualified(machine, d.key), d.name, view.ram_total_bytes))
                for d in view.devices
            )
    check_device_names(spec, [d for _, d in devices], where=" on any machine", see=SEE)
    check_memory(spec, [_with_machine(d, m) for m, d in devices], where=" on any machine")


def _unknown_machine(task: str, wanted: str, known: frozenset[str]) -> str:
    near = difflib.get_close_matches(wanted, sorted(known), n=1, cutoff=0.3)
    closest = f"; closest: {near[0]}" if near else ""
    return (
        f"{task}: --machine {wanted}: no machine of that name in the cluster{closest}; machines: "
        f"{', '.join(sorted(known))} — see `gputray cluster status`"
    )
