"""The other machines of a cluster, in the panel below this machine's cards: one group per machine.

A group is a header (the machine's name; "offline since 14:02" in local time for one that left) and a
compact one-line card per GPU: load, temperature and VRAM as that machine's own gputray reads them
("—" where it cannot), with why it is busy and our jobs there in the tooltip. A machine that left has
no cards, only its header: the cluster keeps no readings of a machine it cannot reach.

Like the rest of the panel, every line is an :class:`ElidedLabel` of one line, so a long name or
reason never widens the panel; the panel is sized again only when a machine or a GPU comes or goes.
"""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QHBoxLayout, QSizePolicy, QVBoxLayout, QWidget

from gputray.cluster.picture import ClusterPicture, MachineSummary
from gputray.cluster.wire import DeviceView
from gputray.gui import messages
from gputray.gui.i18n import tr
from gputray.gui.theme import colors
from gputray.gui.widgets import ElidedLabel, FigureLabel
from gputray.monitor.records import Sample
from gputray.monitor.units import DASH, format_pair


def clock_text(epoch_s: float, now_s: float) -> str:
    """``14:02`` in local time when it is today, else ``2026-12-01 14:02``."""
    at = dt.datetime.fromtimestamp(epoch_s)
    today = dt.datetime.fromtimestamp(now_s).date()
    return at.strftime("%H:%M" if at.date() == today else "%Y-%m-%d %H:%M")


def machine_state_text(m: MachineSummary, now_s: float, *, connected: bool = True) -> str:
    if m.local:
        return tr("this machine") if connected else tr("this machine, not connected to the cluster")
    if m.online:
        return tr("DEMO") if m.demo else ""
    if m.offline_since_s is None:
        return tr("offline")
    return tr("offline since {time}").format(time=clock_text(m.offline_since_s, now_s))


def remote_metrics_line(d: DeviceView) -> str:
    """Load, temperature and VRAM of another machine's GPU, as its own card would say them (from that
    machine's own reading: "—" for what it cannot read or has not read yet)."""
    s = d.reading if d.reading is not None else Sample(key=d.key, timestamp_s=0.0)
    if s.state == "lost":
        return messages.device_gone("lost", s.reason)
    if s.state == "asleep":
        return tr("asleep (not woken to read it)")
    if s.state == "unavailable":
        return messages.device_gone("unavailable", s.reason)
    util = DASH if s.util_percent is None else f"{s.util_percent:.0f} %"
    temp = DASH if s.temp_c is None else f"{s.temp_c:.0f} °C"
    return f"{util}  ·  {temp}  ·  VRAM {format_pair(s.vram_used_bytes, s.vram_total_bytes)}"


def remote_tooltip(d: DeviceView) -> str:
    busy = messages.reasons(d.reasons) if d.busy else ""
    lines = [tr("busy: {reasons}").format(reasons=busy) if busy else tr("not in use by other programs")]
    if d.running_names:
        lines.append(tr("our jobs here: {names}").format(names=", ".join(d.running_names)))
    if d.paused:
        lines.append(tr("the queue is paused on this GPU"))
    return "\n".join(lines)


class RemoteGpuCard(QFrame):
    """One GPU of another machine, on one line."""

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setObjectName("remoteGpuCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 3, 8, 3)
        row.setSpacing(6)
        self.name_label = ElidedLabel("", self)
        # load, temperature and VRAM: primary figures, whole (the name and "busy" give way to them)
        self.metrics_label = FigureLabel(self, templates=("100 %  ·  100 °C  ·  VRAM 88.8/88.8 GiB",))
        self.metrics_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        # "busy" (external use, as its machine judges it) or "paused", so a glance says where work can go
        self.state_label = ElidedLabel("", self)
        self.state_label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        row.addWidget(self.name_label, 1)
        row.addWidget(self.state_label)
        row.addWidget(self.metrics_label)
        self.device: DeviceView | None = None

    def show_device(self, d: DeviceView) -> None:
        self.device = d
        self.name_label.setText(d.name)
        self.name_label.set_own_tooltip(remote_tooltip(d))
        state = tr("busy") if d.busy else tr("paused") if d.paused else ""
        self.state_label.setText(state)
        self.state_label.set_own_tooltip(remote_tooltip(d))
        self.state_label.setVisible(bool(state))
        color = colors().states["waiting" if d.busy else "queued"]
        self.state_label.setStyleSheet(f"color: {color}")
        self.metrics_label.set_figures(remote_metrics_line(d))


class MachineGroup(QWidget):
    """A machine's header and its GPUs' cards."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.setObjectName("machineGroup")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 4, 0, 0)
        box.setSpacing(3)
        head = QHBoxLayout()
        self.name_label = ElidedLabel(name, self)
        bold = QFont(self.name_label.font())
        bold.setBold(True)
        self.name_label.setFont(bold)
        self.state_label = ElidedLabel("", self)
        self.state_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.state_label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        head.addWidget(self.name_label, 1)
        head.addWidget(self.state_label)
        box.addLayout(head)
        self.cards_box = QVBoxLayout()
        self.cards_box.setSpacing(3)
        box.addLayout(self.cards_box)
        self.cards: dict[str, RemoteGpuCard] = {}
        self.machine: MachineSummary | None = None

    def show_machine(self, m: MachineSummary, now_s: float, *, connected: bool = True) -> bool:
        """Show ``m``; True when its cards came or went (the panel is sized again then)."""
        self.machine = m
        self.name_label.setText(m.name)
        state = machine_state_text(m, now_s, connected=connected)
        self.state_label.setText(state)
        self.state_label.setVisible(bool(state))
        c = colors()
        self.name_label.setStyleSheet("" if m.online else f"color: {c.secondary_text}")
        quiet = m.local or not m.online  # DEMO on a machine that is up stands out, as the banner does
        self.state_label.setStyleSheet(f"color: {c.secondary_text if quiet else c.notice_text}")
        keys = [d.key for d in m.devices]
        changed = keys != list(self.cards)
        if changed:
            for card in self.cards.values():
                self.cards_box.removeWidget(card)
                card.deleteLater()
            self.cards = {}
            for d in m.devices:
                card = RemoteGpuCard(d.key, self)
                self.cards_box.addWidget(card)
                self.cards[d.key] = card
        for d in m.devices:
            self.cards[d.key].show_device(d)
        return changed


class ClusterSection(QWidget):
    """Every other machine of the cluster, one :class:`MachineGroup` each; hidden outside a cluster."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("clusterSection")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.groups_box = QVBoxLayout(self)
        self.groups_box.setContentsMargins(0, 0, 0, 0)
        self.groups_box.setSpacing(4)
        self.groups: dict[str, MachineGroup] = {}
        self.hide()

    def show_picture(self, picture: ClusterPicture | None, now_s: float) -> bool:
        """Show the other machines of ``picture`` (None: not in a cluster); True when the section's
        height changed (a machine or a GPU came or went)."""
        others = picture.others() if picture is not None else ()
        names = [m.name for m in others]
        changed = names != list(self.groups)
        if changed:
            for group in self.groups.values():
                self.groups_box.removeWidget(group)
                group.deleteLater()
            self.groups = {}
            for name in names:
                group = MachineGroup(name, self)
                self.groups_box.addWidget(group)
                self.groups[name] = group
        for m in others:
            changed = self.groups[m.name].show_machine(m, now_s) or changed
        self.setVisible(bool(others))
        return changed
