"""What the tray shows of the cluster: every machine, online or since when not, with its GPUs.

Read from the owner's cluster document (``ClusterLink.report_doc``: the config, whether a bridge talks
to us, and the bridge's last report) into the tray's own records. No Qt
and no Ray here. A machine counts as online only while a bridge talks to this owner and reaches the
Ray head: a report the bridge sent before it stopped says nothing about now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputray.cluster.wire import DeviceView
from gputray.scheduler.cluster_port.records import ClusterStatus

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


def picture_from_doc(doc: ClusterStatus) -> ClusterPicture | None:
    """The picture of ``ClusterLink.report_doc()``; None when this machine is in no cluster."""
    if not doc.configured:
        return None
    local = doc.machine
    report = doc.report
    connected = doc.bridge.active and report is not None and report.state == "connected"
    machines: dict[str, MachineSummary] = {local: MachineSummary(local, True, True)}
    for m in report.machines if report is not None else ():
        is_local = m.name == local
        online = is_local or (connected and m.alive)
        machines[m.name] = MachineSummary(
            name=m.name,
            local=is_local,
            online=online,
            offline_since_s=None if online or m.left_at is None else m.left_at,
            demo=bool(m.demo),
            devices=m.devices if online else (),
        )
    ordered = [machines[local], *(machines[n] for n in sorted(machines) if n != local)]
    return ClusterPicture(machine=local, connected=connected, machines=tuple(ordered))


def cluster_picture(link: ClusterPort | None) -> ClusterPicture | None:
    """What the owner's cluster link knows now (any thread: it reads a report the link replaces whole)."""
    return None if link is None else picture_from_doc(link.report_doc())
