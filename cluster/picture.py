"""What the tray shows of the cluster: every machine, online or since when not, with its GPUs.

Read from the owner's cluster document (``ClusterLink.report_doc``: the config, whether a bridge talks
to us, and the bridge's last report) into frozen records, so the tray never walks a report dict. No Qt
and no Ray here. A machine counts as online only while a bridge talks to this owner and reaches the
Ray head: a report the bridge sent before it stopped says nothing about now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputray.cluster.wire import DeviceView, report_devices

if TYPE_CHECKING:
    from gputray.scheduler.cluster_port import ClusterPort


@dataclass(frozen=True)
class MachineSummary:
    name: str
    local: bool
    online: bool
    offline_since_s: float | None = None  # epoch s it left (None while online, or never seen to leave)
    demo: bool = False
    devices: tuple[DeviceView, ...] = ()  # its GPUs as its own owner judges them; none while offline


@dataclass(frozen=True)
class ClusterPicture:
    machine: str  # this machine's name
    connected: bool  # a bridge talks to this owner and reaches the Ray head
    machines: tuple[MachineSummary, ...] = ()  # this machine first, then the others by name

    def others(self) -> tuple[MachineSummary, ...]:
        return tuple(m for m in self.machines if not m.local)

    def online_others(self) -> tuple[str, ...]:
        """The other machines a task can be sent to now (``submit --machine NAME``)."""
        return tuple(m.name for m in self.others() if m.online)


def picture_from_doc(doc: Mapping[str, Any]) -> ClusterPicture | None:
    """The picture of ``ClusterLink.report_doc()``; None when this machine is in no cluster."""
    if not doc.get("configured"):
        return None
    local = str(doc.get("machine") or "")
    bridge = doc.get("bridge") or {}
    report = doc.get("report") or {}
    connected = bool(bridge.get("active")) and report.get("state") == "connected"
    by_machine = report_devices(report)
    machines: dict[str, MachineSummary] = {local: MachineSummary(local, True, True)}
    for name, m in (report.get("machines") or {}).items():
        is_local = name == local
        online = is_local or (connected and bool(m.get("alive")))
        left_at = m.get("left_at")
        machines[name] = MachineSummary(
            name=name,
            local=is_local,
            online=online,
            offline_since_s=None if online or left_at is None else float(left_at),
            demo=bool(m.get("demo")),
            devices=tuple(by_machine.get(name, ())) if online else (),
        )
    ordered = [machines[local], *(machines[n] for n in sorted(machines) if n != local)]
    return ClusterPicture(machine=local, connected=connected, machines=tuple(ordered))


def cluster_picture(link: ClusterPort | None) -> ClusterPicture | None:
    """What the owner's cluster link knows now (any thread: it reads a report the link replaces whole)."""
    return None if link is None else picture_from_doc(link.report_doc())
