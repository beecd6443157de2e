"""The dashboard's Residents tab: the GPU servers running here (Ollama, llama-server, llama-swap,
ComfyUI, LM Studio, those ``[[resident]]`` adds), what each holds on which GPU and since when it has
been idle, and the GPUs an exclusive app (a game) has taken: what ``gputray residents`` lists."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from gputray.gui.i18n import tr, tr_noop
from gputray.gui.resident_text import held_text, idle_words, taken_text
from gputray.scheduler.client.replies import RoomReply

RESIDENT_HEADERS = (
    tr_noop("Resident"),
    tr_noop("Device"),
    tr_noop("Holds"),
    tr_noop("Idle"),
    tr_noop("Models"),
    tr_noop("Port"),
)


class ResidentsTable(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(RESIDENT_HEADERS), parent)
        self.setObjectName("residentsTable")
        self.horizontalHeader().setStretchLastSection(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.verticalHeader().hide()
        self.retranslate()

    def retranslate(self) -> None:
        self.setHorizontalHeaderLabels([tr(h) for h in RESIDENT_HEADERS])
        self.setToolTip(tr("GPU servers running here; an idle one may free its memory for a waiting job"))

    def show_room(self, room: RoomReply | None, device_names: dict[str, str]) -> None:
        """One row per resident, then one per GPU an exclusive app took; "—" where nothing is known."""
        rows: list[tuple[str, ...]] = []
        if room is not None:
            # those on a GPU first (by GPU, largest first); one seen on none (its memory not found on any
            # GPU of this machine) last: it was listed first, above the ones the cards show
            for r in sorted(
                room.residents, key=lambda r: (r.device is None, r.device or "", -(r.held_bytes or 0))
            ):
                device = device_names.get(r.device or "", r.device or "—")
                port = "—" if r.port is None else str(r.port)
                rows.append(
                    (
                        r.name,
                        device,
                        held_text(r),
                        idle_words(r, room.now_s),
                        ", ".join(r.models) or "—",
                        port,
                    )
                )
            for key, app in sorted(room.taken.items()):
                rows.append((app, device_names.get(key, key), "—", taken_text(app), "—", "—"))
        self.setRowCount(len(rows))
        for row, values in enumerate(rows):
            for col, text in enumerate(values):
                item = self.item(row, col)
                if item is None:
                    item = QTableWidgetItem(text)
                    self.setItem(row, col, item)
                elif item.text() != text:
                    item.setText(text)
                item.setToolTip(text)
