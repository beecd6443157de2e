"""How a machine's pause shows on its devices in the cluster report (``status --cluster``): one place
for the bridge, which writes the report from each machine's view, and for this machine's owner, which
lays its own pause over its devices in that report the moment ``pause`` or ``resume`` answers (the
bridge's copy may be a second old)."""

from __future__ import annotations

import msgspec

from gputray.monitor.busy_why import BusyWhy, PausedOn
from gputray.scheduler.client.replies import Paused
from gputray.scheduler.cluster_port.records import ClusterReport, DeviceView


def mark_paused(d: DeviceView, machine: str, *, queue_paused: bool, device_paused: bool) -> DeviceView:
    """``d`` (one device of ``machine``) with ``paused`` and its first reason as the pause says."""
    reasons: list[BusyWhy] = [r for r in d.reasons if not isinstance(r, PausedOn)]
    paused = queue_paused or device_paused
    if paused:  # paused there: it takes no job of ours
        reasons.insert(0, PausedOn(machine=machine, whole_queue=queue_paused))
    return msgspec.structs.replace(d, paused=paused, reasons=tuple(reasons))


def with_local_pause(report: ClusterReport | None, machine: str, paused: Paused) -> ClusterReport | None:
    """The bridge's ``report`` with ``machine``'s devices paused as ``paused`` says (the owner's own)."""
    if report is None:
        return None
    machines = tuple(
        msgspec.structs.replace(
            m,
            devices=tuple(
                mark_paused(d, machine, queue_paused=paused.all, device_paused=d.key in paused.devices)
                for d in m.devices
            ),
        )
        if m.name == machine and m.devices
        else m
        for m in report.machines
    )
    return msgspec.structs.replace(report, machines=machines)
