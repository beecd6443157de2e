"""The running tray app: wires the owner (monitor + queue) to the icon, panel, menu, bubble and dialogs.

Threads: the monitor calls back from its own thread and the queue from its worker threads; both only
emit Qt signals here, so every widget is touched on the GUI thread. Nothing polls the hardware here:
the one Monitor inside the Owner does, and its snapshots are pushed to us.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication, QMessageBox, QSystemTrayIcon

from gputray.cluster.picture import ClusterPicture, cluster_picture
from gputray.gui import window_audit
from gputray.gui.gui_state import GuiState
from gputray.gui.i18n import install_language, resolve_language, tr, tr_noop, trn
from gputray.gui.menu import DEMO_LOCKED, TrayMenu
from gputray.gui.messages import Note, counted_note, note
from gputray.gui.notifications import Notice, Notifier
from gputray.gui.offer_prompts import RUN_HERE, OfferPrompts
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.gui.room_prompts import RoomPrompts
from gputray.gui.theme import ThemeWatcher, scheme_name
from gputray.gui.tray_icon import TrayIconController, picture_for, short_name, summary_line
from gputray.gui.tray_requests import OwnerRequests
from gputray.gui.tray_room import TrayRoom
from gputray.gui.tray_windows import TrayWindows
from gputray.monitor.records import Snapshot
from gputray.scheduler.client.connection import app_paths
from gputray.scheduler.client.replies import Offer, Paused, Reply, RoomReply, TaskView
from gputray.scheduler.client.tasks import QueueEvent
from gputray.scheduler.client.words import Reason

if TYPE_CHECKING:
    from gputray.scheduler.client.host import Owner

log = logging.getLogger("gputray.gui")
R = TypeVar("R", bound=Reply)

NO_GPU_NOTE = tr_noop("No GPU was found on this machine, so gputray shows two simulated GPUs (DEMO).")
NO_TRAY_NOTE = tr_noop(
    "No system tray was found on this desktop (for example stock GNOME without the "
    "AppIndicator extension), so gputray runs as this window. Closing it quits gputray."
)
BACKENDS_FAILED_NOTE = tr_noop("The GPU backends failed to start ({error}).")
OWNER_FAILED_NOTE = tr_noop("gputray could not start its queue: {error}")
CONFIG_NOTE = tr_noop("Your config file has a problem, so the defaults are used: {error}")
CONFIG_PROBLEMS_NOTE = tr_noop("Your config file has %n problem(s) (`gputray config` lists them): {first}")


def click_on_icon(tray: QSystemTrayIcon) -> bool:
    """Whether the pointer is on the tray icon now (where a tray reports its geometry)."""
    from PySide6.QtGui import QCursor

    where = tray.geometry()
    return where.isValid() and not where.isEmpty() and where.contains(QCursor.pos())


class TrayApp(OwnerRequests, TrayWindows, TrayRoom, QObject):
    snapshot_arrived = Signal(object)
    queue_event_arrived = Signal(str, object, object)  # kind, TaskView, its words (a reasons.codes Reason)
    owner_started = Signal(object)
    files_opened = Signal(list)  # from the owner's IPC thread: "Open with", "Send To", a second launch

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        tray_available: bool | None = None,
        tray: QSystemTrayIcon | None = None,
    ) -> None:
        super().__init__(None)
        from gputray.scheduler.client.settings import Config, ConfigError, read_config

        self.args = args
        self.paths = app_paths()
        self.exit_code = 0
        try:
            self.config = read_config(self.paths.config_file)
            self.config_error: str | None = None
        except ConfigError as exc:
            self.config = Config(str(self.paths.config_file))
            self.config_error = str(exc)
        install_language(resolve_language(self.config.gui.language))
        self.state = GuiState(self.paths.state_dir / "gui_state.json")
        self.demo = bool(args.demo or args.demo_scenario)
        self.owner: Owner | None = None
        self.monitor: Any = None
        self.latest: Snapshot | None = None
        self.notes: list[Note] = self._config_notes()
        self._unsubscribe: Any = None
        self._starting = False
        self._left_demo = False  # Demo mode was unticked: the owner restarts on the real backends
        self.dashboard: Any = None
        self.bubble: Any = None
        self.paused = Paused()
        self.tray_available = (
            QSystemTrayIcon.isSystemTrayAvailable() if tray_available is None else tray_available
        )
        self.model = QueueModel(self)
        self.theme = ThemeWatcher(self)
        self.theme.changed.connect(self._on_scheme_changed)
        log.info("colour scheme: %s", scheme_name())

        self.tray = tray if tray is not None else QSystemTrayIcon(self)
        self.tray.setParent(self)
        self.icon_ctl = TrayIconController(self.tray)
        self.notifier = Notifier(self._show_notice, enabled=dict(self.config.gui.notifications) or None)
        self.offers = OfferPrompts(self, self.notifier.settled_offers)  # "run elsewhere now?" answered
        self.room_prompts = RoomPrompts(self, self.offers)  # "free an idle resident for it?" answered
        self.offers.other_answers.append(self.room_prompts.on_answer)
        self.room: RoomReply | None = None  # the owner's `room` at the last snapshot (tray_room)
        self._balloon: Notice | None = None  # the last notice in the tray's balloon: what a click opens
        self.tray.activated.connect(self._on_activated)
        self.tray.messageClicked.connect(self._on_message_clicked)
        self._build_windows()

        self.snapshot_arrived.connect(self._on_snapshot, Qt.ConnectionType.QueuedConnection)
        self.queue_event_arrived.connect(self._on_queue_event, Qt.ConnectionType.QueuedConnection)
        self.owner_started.connect(self._on_owner_started, Qt.ConnectionType.QueuedConnection)
        self.files_opened.connect(self._on_files_opened, Qt.ConnectionType.QueuedConnection)
        # diagnostics (and the X11 tests): every window and dialog audited when shown
        self.window_auditor = window_audit.WindowAuditor(self) if window_audit.enabled() else None
        self.visible_timer = QTimer(self)  # runs only while the panel is on screen
        self.visible_timer.setInterval(1000)
        self.visible_timer.timeout.connect(self._tick_visible)
        self._ticks = 0

    # -- windows ---------------------------------------------------------------------------------------
    def _build_windows(self) -> None:
        windowed = not self.tray_available
        self.panel = Panel(self.model, demo=self.demo, windowed=windowed)
        self.panel.cancel_requested.connect(self.cancel)
        self.panel.retry_requested.connect(self.retry)
        self.panel.pause_job_requested.connect(self.pause_job)
        self.panel.move_requested.connect(self.move)
        self.panel.priority_requested.connect(self.set_priority)
        self.panel.pause_requested.connect(self.pause)
        self.panel.resume_requested.connect(self.resume)
        self.panel.open_log_requested.connect(self.open_log)
        self.panel.files_dropped.connect(self.drop_files)
        self.panel.dashboard_requested.connect(lambda: self.open_dashboard())
        self.panel.stop_process_requested.connect(self.stop_process)
        self.panel.offer_answered.connect(self._on_offer_answered)
        self.panel.room_answered.connect(self._on_room_answered)
        self.panel.room_settled = self.room_prompts.settled  # one set: answered anywhere, asked nowhere again
        self.panel.installEventFilter(self)
        self.menu = TrayMenu(None, demo=self.demo)
        self.menu.show_panel_action.triggered.connect(lambda: self.show_panel(None))
        self.menu.pause_action.toggled.connect(lambda on: self.pause(None) if on else self.resume(None))
        self.menu.dashboard_action.triggered.connect(lambda: self.open_dashboard())
        self.menu.doctor_action.triggered.connect(self.run_doctor)
        self.menu.settings_action.triggered.connect(self.open_settings)
        self.menu.demo_action.toggled.connect(self.set_demo)
        self.menu.bubble_action.toggled.connect(self.set_bubble)
        self.menu.about_action.triggered.connect(self.open_about)
        self.menu.quit_action.triggered.connect(lambda: self.quit_asking())
        self.tray.setContextMenu(self.menu)
        self.menu.aboutToShow.connect(lambda: log.info("tray menu shown"))
        self.panel.set_notice(self.notice_text)

    def _config_notes(self) -> list[Note]:
        """The banner's word on the config file: unreadable, or its bad values and unknown keys (only
        logged before, so a typo in a tray-only setup went unseen)."""
        if self.config_error is not None:
            return [note(CONFIG_NOTE, error=self.config_error)]
        problems = self.config.problems
        if not problems:
            return []
        first = problems[0].said or problems[0].message  # a code: worded in the language shown
        return [counted_note(CONFIG_PROBLEMS_NOTE, len(problems), first=first)]

    def notice_text(self) -> str:
        """The panel's banner, in the current language: no tray, no GPU (demo), start-up problems."""
        parts = [tr(NO_TRAY_NOTE)] if not self.tray_available else []
        parts += [n.text() for n in self.notes]
        return "\n".join(parts)

    def eventFilter(self, watched: QObject, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if watched is self.panel:
            if event.type() == QEvent.Type.Show:
                self._on_panel_shown()
            elif event.type() == QEvent.Type.Hide:
                self.visible_timer.stop()
            elif event.type() == QEvent.Type.Close and not self.tray_available:
                self.quit_asking()
        return False

    # -- start / stop ----------------------------------------------------------------------------------
    def start(self) -> None:
        self.icon_ctl.update(
            picture_for(None, waiting=0, demo=self.demo),
            summary_line(None, waiting=0, running=0, demo=self.demo),
        )
        if self.tray_available:
            self.tray.show()
            log.info("tray ready")
        else:
            log.warning("no system tray available: showing the panel as a window")
            self.panel.show_windowed()
        self.start_owner(force_demo=self.demo)
        if self.state.get("bubble_visible", False):
            self.menu.bubble_action.setChecked(True)

    def start_owner(self, *, force_demo: bool) -> None:
        if self._starting:
            return
        self._starting = True
        args = self.args

        def work() -> None:
            result: object
            try:
                result = self._make_owner(force_demo, args)
            except BaseException as exc:  # reported on the GUI thread
                result = exc
            self.owner_started.emit(result)

        threading.Thread(target=work, name="gputray-owner-start", daemon=True).start()

    def _make_owner(self, force_demo: bool, args: argparse.Namespace) -> tuple[Any, Any, bool, list[Note]]:
        from gputray.cluster.link import ClusterLink
        from gputray.monitor.factory import build_monitor, has_gpu
        from gputray.scheduler.client.host import Owner

        thresholds, interval_s = self.config.thresholds, self.config.monitor.interval_s
        notes: list[Note] = []
        demo = force_demo
        monitor = None
        if not demo:
            try:
                monitor = build_monitor(
                    sysfs_root=args.sysfs_root,
                    proc_root=args.proc_root,
                    thresholds=thresholds,
                    interval_s=interval_s,
                )
                found = has_gpu(monitor.sample_once())
            except Exception as exc:  # a backend that cannot even load: say so, show the demo
                log.exception("the GPU backends failed to start")
                monitor, found = None, False
                notes.append(note(BACKENDS_FAILED_NOTE, error=exc))
            if not found:
                if monitor is not None:
                    monitor.stop()
                monitor, demo = None, True
                notes.append(note(NO_GPU_NOTE))
                log.warning("no GPU found by the real backends: starting in demo mode")
        if monitor is None:
            monitor = build_monitor(
                demo=True, scenario=args.demo_scenario, thresholds=thresholds, interval_s=interval_s
            )
        owner = Owner(
            self.paths,
            demo=demo,
            scenario=args.demo_scenario,
            monitor=monitor,
            on_event=self._event_from_thread,
            config=self.config,  # the owner logs its problems
            cluster=ClusterLink,  # the link to the other machines; the scheduler never imports the cluster
            # `gputray queue` … handed to a warm copy (gui/quick_server); set by run_tray, not in tests
            quick_server=getattr(args, "quick_server", None),
        )
        owner.files_opener = self.files_opened.emit
        try:
            owner.start()
        except BaseException:
            monitor.stop()
            raise
        return owner, monitor, demo, notes

    def _event_from_thread(self, event: QueueEvent) -> None:
        self.queue_event_arrived.emit(event.kind, TaskView.of(event.task, event.offer), event.message)

    def _on_owner_started(self, result: Any) -> None:
        self._starting = False
        if isinstance(result, BaseException):
            from gputray.scheduler.client import connection as ipc

            if isinstance(result, ipc.OwnerAlreadyRunning):
                log.warning("another gputray became the owner first: handing over and quitting")
                from gputray.gui.hand_over import hand_over

                hand_over(self.args.files)
                self.exit_code = 0
                self.quit()
                return
            log.error("could not start the queue owner: %s", result, exc_info=result)
            failed = note(OWNER_FAILED_NOTE, error=result)
            self.notes.append(failed)
            self.panel.set_notice(self.notice_text)
            self.tray.setToolTip("gputray — " + failed.text())
            if not self.panel.isVisible():
                self.show_panel(None)
            return
        self.owner, self.monitor, demo, notes = result
        self.notes += notes
        self._set_demo_flag(demo)
        no_gpu = any(n.source == NO_GPU_NOTE for n in notes)
        self.menu.set_demo_locked(no_gpu)
        if no_gpu and self._left_demo:  # the user unticked Demo mode: say why it is ticked again
            self._warn(tr(DEMO_LOCKED))
        self._left_demo = False
        self.panel.set_notice(self.notice_text)
        self._unsubscribe = self.monitor.subscribe(self.snapshot_arrived.emit)
        self.reload_queue()
        log.info("owner started (demo=%s)", demo)
        if self.args.files:  # `gputray FILE…` (a desktop entry's %F): as if dropped on the panel
            files, self.args.files = list(self.args.files), []
            self.drop_files(files)
        if self.monitor.latest is not None:
            self._on_snapshot(self.monitor.latest)

    def _set_demo_flag(self, demo: bool) -> None:
        self.demo = demo
        self.panel.set_demo(demo)
        self.menu.demo_action.blockSignals(True)
        self.menu.demo_action.setChecked(demo)
        self.menu.demo_action.blockSignals(False)
        if self.bubble is not None:
            self.bubble.demo = demo
            self.bubble.update()

    def stop_owner(self, *, keep_jobs: bool = False) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.owner is not None:
            try:
                self.owner.stop(kill_running=not keep_jobs)
            except Exception:
                log.exception("stopping the owner failed")
            self.owner = None
        if self.monitor is not None:
            with contextlib.suppress(Exception):
                self.monitor.stop()
            self.monitor = None

    def shutdown(self, *, keep_jobs: bool = False) -> None:
        self.visible_timer.stop()
        self.offers.close()
        self.stop_owner(keep_jobs=keep_jobs)
        self.tray.hide()

    def quit(self, *, keep_jobs: bool = False) -> None:
        self.shutdown(keep_jobs=keep_jobs)
        app = QApplication.instance()
        if app is not None:
            app.exit(self.exit_code)

    def quit_asking(self) -> None:
        """Quit from the menu (or closing the window): with jobs running, ask whether they keep running
        (the next owner records how they end and never runs them again), stop, or nothing happens."""
        running = self.owner.running_jobs() if self.owner is not None else 0
        choice = self.ask_quit(running) if running else "stop"
        if choice is None:
            if not self.tray_available:
                self.panel.show()  # the window was closing: it stays
            return
        self.quit(keep_jobs=choice == "keep")

    @staticmethod
    def ask_quit(running: int) -> str | None:
        """The person's answer: keep, stop, or None to cancel the quit. Tests replace it."""
        box = QMessageBox(QMessageBox.Icon.Question, "gputray", "")
        box.setText(trn("%n job(s) are running. Keep them running after gputray quits?", running))
        box.setInformativeText(
            tr("Kept jobs run to their end; when gputray starts again it records how they ended.")
        )
        keep = box.addButton(tr("Keep running"), QMessageBox.ButtonRole.AcceptRole)
        stop = box.addButton(tr("Stop them"), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep)
        box.exec()
        clicked = box.clickedButton()
        return "keep" if clicked is keep else "stop" if clicked is stop else None

    # -- events ----------------------------------------------------------------------------------------
    def _on_snapshot(self, snap: Snapshot) -> None:
        self.latest = snap
        self._refresh_room(snap)
        self._refresh_icon(snap)
        if snap.events:
            self.notifier.on_device_events(snap.events)
        names = {r.info.key: short_name(r.info.name) for r in snap.readings}
        names.setdefault("cpu", "CPU")
        full = {r.info.key: r.info.name for r in snap.readings}
        full.setdefault("cpu", "CPU")
        if self.model.set_device_names(names, full):
            self.panel.fit_columns()  # as wide as the names it now shows
        if self.panel.isVisible():
            self.panel.set_cluster(self.cluster_picture())
            self.panel.update_snapshot(snap, self.monitor.history if self.monitor else None)

    # -- cluster (gputray.cluster: the owner's link to the other machines) ------------------------------
    def cluster_picture(self) -> ClusterPicture | None:
        """Every machine of the cluster this owner is in, as its bridge last reported; None outside one."""
        return cluster_picture(self.owner.cluster if self.owner is not None else None)

    def _run_on_machines(self) -> list[str] | None:
        """The drop dialog's "Run on" choices besides this machine and any; None outside a cluster."""
        picture = self.cluster_picture()
        return None if picture is None else list(picture.online_others())

    def _on_queue_event(self, kind: str, task: TaskView, message: Reason) -> None:
        self.model.upsert(task)
        if task.state not in ("queued", "waiting"):
            self.offers.task_moved_on(task.id)
            self.room_prompts.task_moved_on(task.id)
        self.notifier.on_queue_event(kind, task, message)
        self.panel.update_queue_label()
        if self.latest is not None:
            self._refresh_icon(self.latest)  # the waiting mark and counts; the snapshot itself is old

    def _refresh_icon(self, snap: Snapshot) -> None:
        running, paused, waiting = self.model.shown_counts()
        taken = self.room.taken if self.room is not None else {}
        picture = picture_for(snap, waiting=waiting, demo=self.demo, taken=taken)
        tooltip = summary_line(
            snap, waiting=waiting, running=running, paused=paused, demo=self.demo, taken=taken
        )
        self.icon_ctl.update(picture, tooltip)

    def _on_panel_shown(self) -> None:
        if self.latest is not None:
            self.panel.update_snapshot(self.latest, self.monitor.history if self.monitor else None)
        self.reload_queue()
        self.visible_timer.start()

    def _tick_visible(self) -> None:
        self._ticks += 1
        self.model.tick()
        if self._ticks % 3 == 0:
            self.reload_queue()

    # -- tray ------------------------------------------------------------------------------------------
    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.toggle_panel()

    def toggle_panel(self) -> None:
        if self.panel.isVisible():
            self.panel.hide()
            return
        hidden_at = self.panel.hidden_by_deactivate_at
        if hidden_at is not None and time.monotonic() - hidden_at < 0.3:
            return  # this very click took the focus away and hid it: a click on the icon closes
        self.show_panel(self.tray.geometry())

    def show_panel(self, anchor: Any) -> None:
        self.panel.set_cluster(self.cluster_picture())
        if self.latest is not None:  # fill the cards first: the panel is sized for what it will show
            self.panel.update_snapshot(self.latest, self.monitor.history if self.monitor else None)
        self.panel.update_queue_label()
        if self.tray_available:
            self.panel.show_at(anchor if anchor is not None else self.tray.geometry())
        else:
            self.panel.show_windowed()
        log.info("panel shown")

    def _show_notice(self, notice: Notice) -> None:
        if notice.offer is not None and self.offers.show(notice):
            return  # the desktop asks, with buttons
        if notice.room is not None and self.room_prompts.show(notice):
            return
        self._balloon = notice
        if self.tray_available and QSystemTrayIcon.supportsMessages():
            icon = (
                QSystemTrayIcon.MessageIcon.Warning
                if notice.critical
                else QSystemTrayIcon.MessageIcon.Information
            )
            self.tray.showMessage(notice.title, notice.message, icon, 8000)
        elif self.tray_available:
            # A tray without balloon support still gets something visible: a tooltip flash.
            self.tray.setToolTip(f"{notice.title}: {notice.message}")
        else:
            shown = f"{notice.title}: {notice.message}"
            self.panel.set_notice(lambda: self.notice_text() + "\n" + shown)

    def _on_message_clicked(self) -> None:
        if click_on_icon(self.tray):
            # Qt's X11 tray reports any click on the icon while a balloon is up as a click on the
            # balloon (before it pops the menu or emits activated): the icon's click is the menu's or
            # the panel's, never the notification's (issue 33).
            log.info("notification dismissed by a click on the icon")
            return
        log.info("notification clicked")
        balloon = self._balloon
        if balloon is not None and balloon.room is not None and balloon.task_id is not None:
            self.show_panel(None)  # at the task, its row menu open: "Free … and run …", "Keep waiting"
            self.panel.offer_menu(balloon.task_id)
            return
        if balloon is not None and balloon.offer is not None and balloon.task_id is not None:
            self.show_panel(None)  # at the task, its row menu open: "Run on … now", "Keep waiting"
            task = next((t for t in self.model.tasks() if t.id == balloon.task_id), None)
            if task is not None and task.offer is None:  # the listing just reloaded knows no offer
                self.model.upsert(msgspec.structs.replace(task, offer=balloon.offer))
            self.panel.offer_menu(balloon.task_id)
            return
        if self.notifier.last_log_path:
            self.open_log(self.notifier.last_log_path)

    def _on_offer_answered(self, task_id: int, answer: str, offer: Offer) -> None:
        """An offer answered in the panel's row menu (where the desktop shows no buttons)."""
        if answer == RUN_HERE:
            self.offers.run_here(task_id, offer)
        else:
            self.offers.keep_waiting(task_id)

    def _warn(self, text: str) -> None:
        """A message box that does not block; ``text`` is worded already (a queue error through
        ``messages.said``, in the user's language where it carries a code)."""
        log.warning("%s", text)
        box = QMessageBox(QMessageBox.Icon.Warning, "gputray", text, QMessageBox.StandardButton.Ok)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.show()
        self._last_warning = box

    # -- settings --------------------------------------------------------------------------------------
    def _apply_settings(self, values: dict[str, Any]) -> None:
        from gputray.scheduler.client.settings import ConfigError, read_config

        with contextlib.suppress(ConfigError):  # the file just written, read as `gputray daemon` reads it
            self.config = read_config(self.paths.config_file)
            self.config_error = None
        kinds = (CONFIG_NOTE, CONFIG_PROBLEMS_NOTE)
        self.notes = [n for n in self.notes if n.source not in kinds] + self._config_notes()
        self.panel.set_notice(self.notice_text)
        self.notifier.enabled.update(self.config.gui.notifications)
        if self.monitor is not None:
            self.monitor.interval_s = self.config.monitor.interval_s
            self.monitor.set_thresholds(self.config.thresholds)
        self.set_language(resolve_language(self.config.gui.language))

    def set_demo(self, demo: bool) -> None:
        if demo == self.demo and self.owner is not None:
            return
        self._left_demo = not demo
        self.stop_owner()
        self.latest = None
        self.notes = self._config_notes()  # the owner's notes go with it; the config's stay
        self.panel.set_notice(self.notice_text)
        self.icon_ctl.update(
            picture_for(None, waiting=0, demo=demo), summary_line(None, waiting=0, running=0, demo=demo)
        )
        self.start_owner(force_demo=demo)
