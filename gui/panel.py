"""The panel a click on the tray opens: every GPU at a glance, the queue with its controls, a drop zone.

A frameless ``Qt.Tool`` window (not ``Qt.Popup``, which closes as soon as the user starts a drag from a
file manager), anchored next to the tray icon on the screen that holds the icon, on whichever edge the
tray sits, or at the cursor where the tray reports no geometry (StatusNotifierItem). It hides when it
loses focus unless pinned. Without a tray it is an ordinary window.

Its size is fixed while it is shown. Its width comes from what must be whole: the GPUs' primary
figures (load, temperature, power, VRAM and shared memory: :class:`FigureLabel`, never elided), the
buttons and the queue's columns in the current language; every other line is an :class:`ElidedLabel`
(too long → "…" and the whole text in the tooltip), and every card has the same lines whatever its GPU
is doing, so nothing widens the panel while shown. Its height is what the content needs at that width
(the wrapped banner included), up to the room beside the icon on the screen's available area; when
that is shorter, the queue list gives up rows first (down to one; it scrolls by itself), so the
drop zone stays whole on a 1366×768 screen. Only when even that does not fit (HiDPI at 2× on a
laptop) does the content scroll. The queue's rows hold still under the pointer (``queue_view``).

The panel only shows and asks: actions leave it as signals the app connects to the queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QCursor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QFont,
    QGuiApplication,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gputray.cluster.picture import ClusterPicture
from gputray.gui.cluster_cards import ClusterSection, MachineGroup
from gputray.gui.device_card import (
    DeviceCard,
    fixed_button_width,
    fmt_gib,
    process_menu,
    secondary_style,
)
from gputray.gui.drop_zone import DropZone
from gputray.gui.i18n import tr
from gputray.gui.legend import gpu_readings, legend_for
from gputray.gui.offer_bar import OfferBar
from gputray.gui.panel_geometry import panel_position, room_beside, screen_for
from gputray.gui.panel_rows import QueueRows
from gputray.gui.queue_model import QueueModel
from gputray.gui.queue_view import QueueTable
from gputray.gui.room_bar import RoomBar, standing_questions
from gputray.gui.room_prompts import QuestionKey, question_key
from gputray.gui.theme import colors, follow_change, is_dark
from gputray.gui.tray_icon import is_hot
from gputray.gui.widgets import ElidedLabel, WrappedLabel
from gputray.monitor.records import Snapshot
from gputray.scheduler.client.replies import DeviceSlots, RoomQuestion, RoomReply

__all__ = ["DeviceCard", "DropZone", "Panel", "process_menu"]

log = logging.getLogger("gputray.gui")
HistoryFn = Callable[[str, str, float], list[tuple[float, float | None]]]
NoticeFn = Callable[[], str]

PANEL_WIDTH = 470  # at least; more when a language's figures or buttons need it
PANEL_MAX_WIDTH = 540  # at most, unless the figures and buttons need more
PANEL_SCREEN_SHARE = 3 / 8  # of the screen's width: wider screens get a wider panel, up to the max
TITLE_BAR_PX = 48  # what a window manager's frame may take from an ordinary window's height


class Panel(QueueRows):
    pause_requested = Signal(object)  # device key, or None for the whole queue
    resume_requested = Signal(object)
    files_dropped = Signal(list)
    dashboard_requested = Signal()
    stop_process_requested = Signal(object)  # ProcessUse

    def __init__(self, model: QueueModel, *, demo: bool = False, windowed: bool = False) -> None:
        super().__init__(None)
        self.model = model
        self.demo = demo
        self.windowed = windowed
        self.pinned = windowed
        self.cards: dict[str, DeviceCard] = {}
        self.room: RoomReply | None = None  # residents, GPUs taken, "ask" questions (set_room)
        self._paused_all = False
        self._jobs: dict[str, tuple[int, int]] = {}  # device key -> (running, slots), from the queue
        self._notice: NoticeFn | None = None
        self._snapshot: Snapshot | None = None
        self._history: HistoryFn | None = None
        self._anchor: QRect | None = None
        self._dark: bool | None = None
        self.hidden_by_deactivate_at: float | None = None
        self.setObjectName("gputrayPanel")
        self.setAcceptDrops(True)
        if windowed:
            self.setWindowFlags(Qt.WindowType.Window)
        else:
            self.setWindowFlags(
                Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
            )

        outer = QVBoxLayout(self)
        outer.setContentsMargins(1, 1, 1, 1)
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.addWidget(self.scroll_area)
        self.content = QWidget(self.scroll_area)
        self.content.setObjectName("panelContent")
        self.scroll_area.setWidget(self.content)
        body = QVBoxLayout(self.content)
        body.setContentsMargins(9, 7, 9, 9)

        head = QHBoxLayout()
        self.title_label = ElidedLabel("", self.content)
        title_font = QFont(self.title_label.font())
        title_font.setBold(True)
        title_font.setPointSizeF(title_font.pointSizeF() * 1.3)
        self.title_label.setFont(title_font)
        head.addWidget(self.title_label, 1)
        self.dashboard_button = QToolButton(self.content)
        self.dashboard_button.clicked.connect(self.dashboard_requested)
        head.addWidget(self.dashboard_button)
        self.pin_button = QToolButton(self.content)
        self.pin_button.setCheckable(True)
        self.pin_button.setChecked(self.pinned)
        self.pin_button.toggled.connect(self.set_pinned)
        self.pin_button.setVisible(not windowed)
        head.addWidget(self.pin_button)
        body.addLayout(head)

        self.notice_label = WrappedLabel(self.content)
        self.notice_label.setObjectName("panelNotice")
        self.notice_label.hide()
        body.addWidget(self.notice_label)

        # In a cluster: this machine's name above its cards, the other machines below (cluster_cards).
        self.local_machine = MachineGroup("", self.content)
        self.local_machine.hide()
        body.addWidget(self.local_machine)
        self.devices_box = QVBoxLayout()
        self.devices_box.setSpacing(6)
        body.addLayout(self.devices_box)
        self.no_gpu_label = ElidedLabel("", self.content)
        self.devices_box.addWidget(self.no_gpu_label)
        self.host_label = ElidedLabel("", self.content)
        body.addWidget(self.host_label)
        self.cluster_section = ClusterSection(self.content)
        body.addWidget(self.cluster_section)
        self._cluster: ClusterPicture | None = None
        self._cluster_now_s = 0.0

        queue_head = QHBoxLayout()
        self.queue_label = ElidedLabel("", self.content)
        queue_font = QFont(self.queue_label.font())
        queue_font.setBold(True)
        self.queue_label.setFont(queue_font)
        queue_head.addWidget(self.queue_label, 1)
        self.pause_all_button = QPushButton(self.content)
        self.pause_all_button.clicked.connect(self._toggle_pause_all)
        queue_head.addWidget(self.pause_all_button)
        body.addLayout(queue_head)

        self.offer_bar = OfferBar(self._offer_answered_in_bar, self.content)
        body.addWidget(self.offer_bar)
        self.room_bar = RoomBar(self._room_answered_in_bar, self.content)  # free an idle resident?
        body.addWidget(self.room_bar)
        self.room_settled: set[QuestionKey] = set()  # answered (the tray's RoomPrompts.settled): not again
        self._answered_offers: set[int] = set()  # answered here: the bar moves on before the reload
        self.table = QueueTable(model, self.content)
        self.table.doubleClicked.connect(self._open_log_at)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._row_menu)
        body.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.cancel_button = QPushButton(self.content)
        self.retry_button = QPushButton(self.content)
        self.up_button = QPushButton("▲", self.content)
        self.down_button = QPushButton("▼", self.content)
        self.log_button = QPushButton(self.content)
        for b in (self.cancel_button, self.retry_button, self.up_button, self.down_button, self.log_button):
            buttons.addWidget(b)
        self.cancel_button.clicked.connect(lambda: self._cancel())
        self.retry_button.clicked.connect(lambda: self._retry())
        self.up_button.clicked.connect(lambda: self._move(-1))
        self.down_button.clicked.connect(lambda: self._move(1))
        self.log_button.clicked.connect(lambda: self._open_log())
        body.addLayout(buttons)
        # The buttons act on the selection: each is enabled only when it would do something, and says
        # in its tooltip what to select (a click that did nothing at all was a dead end).
        self.table.selectionModel().selectionChanged.connect(lambda *_: self.update_buttons())
        for change in (model.dataChanged, model.rowsInserted, model.rowsRemoved, model.modelReset):
            change.connect(lambda *_: self.update_buttons())
        # A reorder (a cancelled task sorts among the ended ones) moves the selection with its task
        # (persistent indexes): the list follows it, so the task Retry and Open log act on is in view.
        model.layoutChanged.connect(lambda *_: self._after_reorder())
        for change in (model.dataChanged, model.rowsInserted, model.rowsRemoved, model.modelReset):
            change.connect(lambda *_: self.refresh_offers())

        self.drop_zone = DropZone(self.content)
        self.drop_zone.set_pinned(self.pinned or windowed)
        body.addWidget(self.drop_zone)
        self.retranslate()
        self.restyle()

    # -- language and colours --------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.setWindowTitle(self.title())
        self.title_label.setText(self.title())
        self.dashboard_button.setText(tr("Dashboard"))
        self.dashboard_button.setToolTip(tr("History, processes, the doctor and task logs"))
        self.pin_button.setText(tr("Pin"))
        self.pin_button.setToolTip(tr("Keep the panel open when it loses focus"))
        self.no_gpu_label.setText(tr("Looking for GPUs…") if self._snapshot is None else tr("No GPU found."))
        self.cancel_button.setText(tr("Cancel"))
        self.retry_button.setText(tr("Retry"))
        self.log_button.setText(tr("Open log"))
        self.update_buttons()
        fixed_button_width(self.pause_all_button, (tr("Pause queue"), tr("Resume queue")))
        self.pause_all_button.setText(tr("Resume queue") if self._paused_all else tr("Pause queue"))
        self.host_label.setText(self._host_text())
        self.update_queue_label()
        self._render_notice()
        self._render_cluster()
        self.fit_columns()
        if self.isVisible() and not self.windowed:
            self.refit()

    def restyle(self) -> None:
        dark = is_dark()
        if dark == self._dark:
            return
        self._dark = dark
        c = colors()
        self.notice_label.setStyleSheet(f"color: {c.notice_text}")
        self.host_label.setStyleSheet(secondary_style())
        if not self.windowed:
            self.setStyleSheet("QWidget#gputrayPanel { border: 1px solid palette(dark); }")
        self.drop_zone.set_highlight(False)
        self.model.restyle()
        self._render_cluster()  # the other machines' headers and "busy" words take the scheme's colours

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        follow_change(event, self.retranslate, self.restyle)

    def fit_columns(self) -> None:
        """Columns as wide as their header and their widest usual value, in this language and font."""
        self.table.fit_columns()

    # -- title / demo ----------------------------------------------------------------------------------
    def title(self) -> str:
        return "gputray — " + tr("DEMO") if self.demo else "gputray"

    def set_demo(self, demo: bool) -> None:
        self.demo = demo
        self.setWindowTitle(self.title())
        self.title_label.setText(self.title())

    def set_notice(self, text: str | NoticeFn | None) -> None:
        """A line above the cards (the demo banner, a start-up error). A callable is asked again after a
        language switch, so the banner stays and speaks the new language."""
        if isinstance(text, str):
            fixed = text
            self._notice = (lambda: fixed) if fixed else None
        else:
            self._notice = text
        self._render_notice()
        if self.isVisible() and not self.windowed:
            self.refit()

    def notice_text(self) -> str:
        return self.notice_label.text() if self._notice is not None else ""

    def _render_notice(self) -> None:
        text = self._notice() if self._notice is not None else ""
        self.notice_label.setText(text)
        self.notice_label.setVisible(bool(text))

    # -- showing ---------------------------------------------------------------------------------------
    def set_pinned(self, pinned: bool) -> None:
        if pinned != self.pinned:
            log.info("panel pinned: %s", pinned)
        self.pinned = pinned
        if self.pin_button.isChecked() != pinned:
            self.pin_button.setChecked(pinned)
        self.drop_zone.set_pinned(pinned or self.windowed)

    def natural_size(self, available: QSize, screen_width: int = 0) -> QSize:
        """The size to show at: as wide as the figures, buttons and columns need, and at least
        ``PANEL_WIDTH`` or 3/8 of a wider screen (up to ``PANEL_MAX_WIDTH``: reasons and the banner
        then take fewer lines); as tall as the content wants at that width; both within
        ``available``. A shorter ``available`` is taken from the queue list (see the module's
        docstring)."""
        outer = self.layout()
        margins = outer.contentsMargins() if outer is not None else None
        extra_w = (margins.left() + margins.right()) if margins else 0
        extra_h = (margins.top() + margins.bottom()) if margins else 0
        layout = self.content.layout()
        if layout is not None:
            layout.activate()
        share = min(PANEL_MAX_WIDTH, int(screen_width * PANEL_SCREEN_SHARE))
        needed = self.content.minimumSizeHint().width() + extra_w
        width = min(max(PANEL_WIDTH, share, needed), available.width())
        self._fit_wrapped(width - extra_w)
        if layout is not None:
            layout.invalidate()
            layout.activate()
        height = self.content.sizeHint().height() + extra_h
        return QSize(width, min(height, available.height()))

    def _fit_wrapped(self, content_width: int) -> None:
        """Give the wrapped lines (the banner, the drop hint) the height they need at this width."""
        body = self.content.layout()
        m = body.contentsMargins() if body is not None else None
        inner = content_width - ((m.left() + m.right()) if m else 0)
        self.notice_label.fit_width(inner)
        zone = self.drop_zone.layout()
        zm = zone.contentsMargins() if zone is not None else None
        self.drop_zone.hint.fit_width(inner - ((zm.left() + zm.right()) if zm else 0) - 4)
        self.drop_zone.updateGeometry()  # its layout tells the panel's only once it has been shown

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.windowed:  # an ordinary window the user resizes: the wrapped lines follow
            self._fit_wrapped(self.scroll_area.viewport().width())

    def content_scrolls(self) -> bool:
        """True when the content does not fit and scrolls (only on screens too short for it)."""
        return self.scroll_area.verticalScrollBar().maximum() > 0

    def show_windowed(self) -> None:
        """Without a tray: show the ordinary window, as large as the panel would be on its screen."""
        self._grow_window()
        self.show()
        self.raise_()

    def _grow_window(self) -> None:
        """The ordinary window grows to show what it holds (a GPU came); it never shrinks what the
        user made larger."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        available = screen.availableGeometry()
        room = QSize(available.width(), max(1, available.height() - TITLE_BAR_PX))
        self.resize(self.size().expandedTo(self.natural_size(room, available.width())))

    def show_at(self, anchor: QRect | None) -> None:
        """Show next to ``anchor`` (the tray icon's geometry); at the cursor when it is empty."""
        if anchor is None or not anchor.isValid() or anchor.isEmpty():
            anchor = QRect(QCursor.pos(), QSize(1, 1))
        self._anchor = QRect(anchor)
        self.refit()
        self.show()
        self.raise_()
        self.activateWindow()

    def refit(self) -> None:
        """Size and place for the current anchor; the size then stays fixed while the panel is shown."""
        anchor = self._anchor or QRect(QCursor.pos(), QSize(1, 1))
        screen = screen_for(anchor)
        available = screen.availableGeometry()
        room = room_beside(anchor, available, screen.geometry()).boundedTo(available.size())
        size = self.natural_size(room, available.width())
        self.setFixedSize(size)
        pos = panel_position(anchor, size, available, screen.geometry())
        self.move(pos)
        log.info(
            "panel at %d,%d %dx%d beside %d,%d %dx%d on screen %s %d,%d %dx%d (scale %.2g)",
            pos.x(), pos.y(), size.width(), size.height(),
            anchor.x(), anchor.y(), anchor.width(), anchor.height(), screen.name(),
            available.x(), available.y(), available.width(), available.height(),
            screen.devicePixelRatio(),
        )  # fmt: skip

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.WindowDeactivate and not self.pinned and self.isVisible():
            self.hidden_by_deactivate_at = time.monotonic()
            self.hide()
        return super().event(event)

    # -- data ------------------------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot, history: HistoryFn | None = None) -> None:
        self._snapshot = snapshot
        self._history = history
        gpus = gpu_readings(snapshot)
        keys = [r.info.key for r in gpus]
        cards_before = list(self.cards)
        lines_changed = False
        for key in list(self.cards):
            if key not in keys:
                gone = self.cards.pop(key)
                self.devices_box.removeWidget(gone)
                gone.deleteLater()
        self.no_gpu_label.setVisible(not gpus)
        if not gpus:
            self.no_gpu_label.setText(tr("No GPU found."))
        for i, (r, entry) in enumerate(zip(gpus, legend_for(gpus), strict=True)):
            card = self.cards.get(r.info.key)
            if card is None:
                card = DeviceCard(r.info.key, self.content)
                card.pause_toggled.connect(self._on_card_pause)
                if r.info.key in self._jobs:
                    card.set_jobs(*self._jobs[r.info.key])
                card.stop_process_requested.connect(self.stop_process_requested)
                self.cards[r.info.key] = card
                self.devices_box.insertWidget(i + 1, card)
                card.show()  # now, not when the layout gets to it: the size below counts it
            verdict = snapshot.verdict(r.info.key)
            procs = [p for p in snapshot.processes if p.device == r.info.key]
            points = history(r.info.key, "util_percent", snapshot.timestamp_s - 300.0) if history else []
            card.update_reading(
                r,
                procs,
                verdict.reasons if verdict and verdict.busy else (),
                is_hot(snapshot, r),
                points,
                snapshot.timestamp_s,
                entry,
            )
            lines_changed |= self._show_room_on(card)
        self.host_label.setText(self._host_text())
        if (list(self.cards) != cards_before or lines_changed) and self.isVisible():
            # a GPU or a resident came or went: the only times the panel changes size while shown
            self._grow_window() if self.windowed else self.refit()

    def set_room(self, room: RoomReply | None) -> None:
        """The residents on each GPU, the GPUs an exclusive app took and the "ask" questions standing
        (the owner's ``room``, asked at each snapshot); the cards show them at the next snapshot, the
        room bar its questions at once."""
        self.room = room
        self.refresh_room_bar()

    def refresh_room_bar(self) -> None:
        readings = self._snapshot.readings if self._snapshot is not None else ()
        names = {r.info.key: r.info.name for r in readings}
        now_s = self.room.now_s if self.room is not None else 0.0
        self.room_bar.show_questions(standing_questions(self.room, self.room_settled), now_s, names)

    def _room_answered_in_bar(self, answer: str, question: RoomQuestion) -> None:
        self.room_settled.add(question_key(question))
        self.refresh_room_bar()
        self.room_answered.emit(answer, question)

    def _show_room_on(self, card: DeviceCard) -> bool:
        room = self.room
        if room is None:
            return card.set_room((), None, 0.0)
        here = [r for r in room.residents if r.device == card.key]
        return card.set_room(here, room.taken.get(card.key), room.now_s)

    def set_cluster(self, picture: ClusterPicture | None, now_s: float | None = None) -> None:
        """The cluster this machine is in (None: none): a header over this machine's cards, a group
        per other machine below them. ``now_s`` decides whether "offline since" needs a date."""
        self._cluster = picture
        self._cluster_now_s = time.time() if now_s is None else now_s
        if self._render_cluster() and self.isVisible() and not self.windowed:
            self.refit()  # a machine or one of its GPUs came or went

    def _render_cluster(self) -> bool:
        picture, now_s = self._cluster, self._cluster_now_s
        was_shown = not self.local_machine.isHidden()
        if picture is not None:
            here = next(m for m in picture.machines if m.local)
            self.local_machine.show_machine(replace(here, devices=()), now_s, connected=picture.connected)
        self.local_machine.setVisible(picture is not None)
        changed = self.cluster_section.show_picture(picture, now_s)
        return changed or was_shown != (picture is not None)

    def _host_text(self) -> str:
        if self._snapshot is None:
            return ""
        h = self._snapshot.host
        if h.cpu_percent is None and h.ram_used_bytes is None:
            return ""
        cpu = "–" if h.cpu_percent is None else f"{h.cpu_percent:.0f} %"
        ram = fmt_gib(h.ram_used_bytes, h.ram_total_bytes)
        return tr("CPU {cpu}  ·  RAM {ram}").format(cpu=cpu, ram=ram) + self._cpu_jobs()

    def _cpu_jobs(self) -> str:
        if "cpu" not in self._jobs:
            return ""
        running, slots = self._jobs["cpu"]
        return "  ·  " + tr("jobs {running}/{slots}").format(running=running, slots=slots)

    def set_jobs(self, devices: Iterable[DeviceSlots]) -> None:
        """Jobs running / slots per device, from the queue listing (``QueueService.devices``)."""
        for d in devices:
            if d.slots is not None:
                self._jobs[d.key] = (d.running, d.slots)
                if d.key in self.cards:
                    self.cards[d.key].set_jobs(d.running, d.slots)
        self.host_label.setText(self._host_text())

    def set_paused(self, paused_all: bool, devices: Iterable[str]) -> None:
        self._paused_all = paused_all
        self.pause_all_button.setText(tr("Resume queue") if paused_all else tr("Pause queue"))
        paused = set(devices)
        for key, card in self.cards.items():
            card.set_paused(key in paused)

    def update_queue_label(self) -> None:
        running, paused, waiting = self.model.shown_counts()
        if paused:  # it said "2 running" of one running job and one paused for another
            text = tr("Queue: {running} running, {paused} paused, {waiting} waiting")
        else:
            text = tr("Queue: {running} running, {waiting} waiting")
        self.queue_label.setText(text.format(running=running, paused=paused, waiting=waiting))

    # -- queue head and cards -------------------------------------------------------------------------
    def _toggle_pause_all(self) -> None:
        if self._paused_all:
            self.resume_requested.emit(None)
        else:
            self.pause_requested.emit(None)

    def _on_card_pause(self, key: str, pause: bool) -> None:
        (self.pause_requested if pause else self.resume_requested).emit(key)

    # -- drops -----------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            self.drop_zone.set_highlight(True)
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dragLeaveEvent(self, event: QEvent) -> None:
        self.drop_zone.set_highlight(False)

    def dropEvent(self, event: QDropEvent) -> None:
        self.drop_zone.set_highlight(False)
        urls = event.mimeData().urls()
        if not urls:
            event.ignore()
            return
        event.acceptProposedAction()
        self.files_dropped.emit([u.toLocalFile() or u.toString() for u in urls])
