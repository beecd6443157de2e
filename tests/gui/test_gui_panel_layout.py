"""The panel shows its numbers: primary figures whole, queue reasons readable, rows that hold still.

Offscreen Qt at the size the panel gives itself beside an icon, in English and Japanese, with the
eGPU's long readings line that used to squeeze "VRAM 14.4 / 15…" out of the card.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace

import msgspec
import pytest
from gui_snapshots import KEY_780M, KEY_5060, snapshot
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect
from PySide6.QtGui import QEnterEvent
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget
from pytestqt.qtbot import QtBot

from gputray.gui import messages
from gputray.gui.i18n import install_language, tr
from gputray.gui.layout_audit import audit
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.gui.widgets import ElidedLabel
from gputray.monitor.busy_why import UtilHigh, Who
from gputray.monitor.records import Snapshot
from gputray.scheduler.reasons.codes import (
    DeviceBusy,
    ExitedWith,
    OnDevice,
    StartsAt,
    WaitingFor,
    WaitingForAny,
)
from gputray.scheduler.replies import TaskView

ANCHOR = QRect(1200, 770, 24, 24)  # bottom-right tray icon


@pytest.fixture(params=["en", "ja"])
def language(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    assert install_language(request.param)
    yield request.param
    install_language("en")


WAITING = WaitingFor(
    label="GeForce RTX 5060 Ti",
    why=DeviceBusy(
        why=(
            UtilHigh(
                who=Who("llama-server"),
                held_bytes=int(14.2 * 1024**3),
                threshold_pct=30.0,
                window_s=10.0,
                util_pct=97.0,
            ),
        )
    ),
)


def egpu_snapshot() -> Snapshot:
    """The seed user's 5060 Ti on OCuLink: every reading the card has, with the PCIe link and fan
    that used to take the memory line's room."""
    snap = snapshot(busy_5060=("llama-server uses 14.2 GiB, 97 %",))
    egpu, igpu = snap.readings
    loaded = replace(
        egpu.sample,
        **dict(pcie_gen=4, pcie_width=4, pcie_max_gen=5, pcie_max_width=8, fan_percent=31.0, fan_rpm=1180),
        **dict(power_limit_w=180.0, mclk_mhz=14001, encoder_percent=12.0, decoder_percent=34.0),
    )
    return replace(snap, readings=(replace(egpu, sample=loaded), igpu))


def shown_texts(root: QWidget) -> list[str]:
    """What is on screen, as drawn: an elided label's shown text, not its whole text."""
    out = []
    for w in root.findChildren(QLabel):
        if w.isVisibleTo(root):
            out.append(w.shown_text() if isinstance(w, ElidedLabel) else w.text())
    return out


def test_primary_figures_are_whole_at_the_width_the_panel_takes(qtbot: QtBot, language: str) -> None:
    panel = Panel(QueueModel(), demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(egpu_snapshot())
    panel.set_jobs([])
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    shared = tr("shared {memory}").split(" ")[0]
    figures = {
        KEY_5060: ["42 %", "61 °C", "95 W", "VRAM 14.2 / 16.0 GiB", f"{shared} –"],
        KEY_780M: ["3 %", "45 °C", "6 W", "VRAM 1.0 / 4.0 GiB", f"{shared} 3.0 / 29.0 GiB"],
    }
    for key, wanted in figures.items():
        texts = shown_texts(panel.cards[key])
        missing = [f for f in wanted if not any(f in t for t in texts)]
        assert missing == [], f"{key}: {missing} not shown whole in {texts}"
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]
    assert report.primary >= 6  # figures line, VRAM and shared, per card
    # the readings line is secondary: it may elide, with everything in its tooltip
    readings = panel.cards[KEY_5060].extras_label
    assert "PCIe 4.0 ×4" in readings.shown_text() or readings.text() in readings.toolTip()


def test_the_audit_allows_no_eliding_of_a_primary_figure(qtbot: QtBot) -> None:
    from gputray.gui.widgets import PRIMARY_PROPERTY, FigureLabel

    window = QWidget()
    qtbot.addWidget(window)
    box = QVBoxLayout(window)
    figure = FigureLabel(window)
    figure.set_figures("VRAM 14.4 / 15.9 GiB")
    figure.setFixedWidth(40)  # squeezed: cut
    marked = ElidedLabel("VRAM 14.4 / 15.9 GiB", window)
    marked.setProperty(PRIMARY_PROPERTY, True)
    marked.setFixedWidth(60)  # elided, with the whole text in its tooltip: still a problem
    plain = ElidedLabel("busy: llama-server uses 14.2 GiB, 97 %", window)
    plain.setFixedWidth(60)  # an ordinary line: elided with its tooltip is fine
    for w in (figure, marked, plain):
        box.addWidget(w)
    window.show()
    QApplication.processEvents()
    assert marked.is_elided() and marked.text() in marked.toolTip()
    report = audit(window)
    found = {p.widget: p.why for p in report.problems}
    assert set(found) == {"FigureLabel", "ElidedLabel"}, found
    assert all("primary figure" in why for why in found.values())
    assert report.elided == 1 and report.elided_texts == [plain.text()]


def waiting_tasks() -> list[TaskView]:
    return [
        TaskView(
            id=1,
            name="upscale holiday photos",
            state="waiting",
            reason=WAITING,
        ),
        TaskView(
            id=2,
            name="nightly training run",
            state="waiting",
            reason=StartsAt(at_s=dt.datetime(2026, 12, 6, 23, 0).timestamp(), with_date=False),
        ),
        TaskView(id=3, name="llama bench", state="running", device=KEY_780M, started_at=1.0),
        TaskView(id=4, name="broken script", state="failed", exit_code=1, reason=ExitedWith(status=1)),
    ]


def test_queue_reasons_are_shown_in_full_under_each_task(qtbot: QtBot, language: str) -> None:
    model = QueueModel(wall_clock=lambda: 100.0)
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(egpu_snapshot())
    model.apply(waiting_tasks())
    model.set_device_names({KEY_5060: "RTX 5060 Ti", KEY_780M: "Radeon 780M"})
    panel.fit_columns()
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    report = audit(panel.table)
    assert report.problems == [], [str(p) for p in report.problems]
    assert report.elided == 0, f"cut in the queue: {report.elided_texts}"
    delegate = panel.table.row_delegate
    reasons = [delegate.second_line_text(model.index(row, 0)) for row in range(model.rowCount())]
    assert reasons[0] == messages.reason(waiting_tasks()[0].reason) and reasons[2] == ""
    # a reason too long even for two whole lines ends in "…", and is whole in its tooltip
    long_reason = WaitingForAny(why=tuple(OnDevice(device=f"GPU {n}", why=WAITING.why) for n in range(8)))
    model.upsert(msgspec.structs.replace(waiting_tasks()[0], reason=long_reason))
    QApplication.processEvents()
    index = model.index(0, 0)
    assert not delegate.second_line_fits(index)
    assert messages.reason(long_reason) in delegate.second_line_tip(index)
    assert audit(panel.table).problems == []


def enter(widget: QWidget) -> None:
    QApplication.sendEvent(widget, QEnterEvent(QPointF(5, 5), QPointF(5, 5), QPointF(5, 5)))


def leave(widget: QWidget) -> None:
    QApplication.sendEvent(widget, QEvent(QEvent.Type.Leave))


def ids(model: QueueModel) -> list[int]:
    return [t.id for t in (model.task(r) for r in range(model.rowCount())) if t is not None]


def test_rows_hold_still_under_the_pointer_and_a_menu_acts_on_its_own_task(qtbot: QtBot) -> None:
    """The report: a right-click 1.5 s after a task started opened the menu, Cancel enabled, on a
    different task. Now the list holds its order while the pointer is on it or a row's menu is open."""
    model = QueueModel(wall_clock=lambda: 100.0)
    panel = Panel(model)
    qtbot.addWidget(panel)
    a, b, c = (TaskView(id=i, name=n, state="waiting") for i, n in ((1, "a.py"), (2, "b.py"), (3, "c.py")))
    model.apply([a, b, c])
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    viewport = panel.table.viewport()
    enter(viewport)
    # b starts: the owner lists running tasks first, and a new task d arrives
    started = msgspec.structs.replace(b, state="running", started_at=99.0)
    d = TaskView(id=4, name="d.py", state="queued")
    model.apply([started, a, c, d])
    assert ids(model) == [1, 2, 3], "no row moved or came while the pointer is on the list"
    assert model.task(1) == started, "b's row says it runs, where it was"
    assert model.counts() == {"running": 1, "waiting": 2, "queued": 1}  # the label counts the news
    # the right-click on the row under the pointer: a, still
    menu = panel.row_menu(0)
    menu.popup(viewport.mapToGlobal(QPoint(5, 5)))
    leave(viewport)  # the menu took the pointer: the order still holds
    model.apply([started, c, d])  # a ended elsewhere meanwhile
    panel.table.selectRow(2)  # and the selection moved
    assert ids(model) == [1, 2, 3]
    cancel = next(x for x in menu.actions() if x.text() == "Cancel")
    assert cancel.isEnabled()
    menu.hide()  # Qt hides the menu, then triggers the chosen action
    assert ids(model) == [2, 3, 4], "the news lands when the menu closes with the pointer gone"
    with qtbot.waitSignal(panel.cancel_requested) as cancelled:
        cancel.trigger()
    assert cancelled.args == [[1]], "the task the menu was opened for, not the row now there"


def test_news_waits_for_the_pointer_to_leave_and_a_hidden_panel_holds_nothing(qtbot: QtBot) -> None:
    model = QueueModel(wall_clock=lambda: 100.0)
    panel = Panel(model)
    qtbot.addWidget(panel)
    model.apply([TaskView(id=1, name="a.py", state="waiting"), TaskView(id=2, name="b.py", state="waiting")])
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    enter(panel.table.viewport())
    model.upsert(TaskView(id=3, name="c.py", state="queued"))
    model.apply([TaskView(id=2, name="b.py", state="waiting"), TaskView(id=1, name="a.py", state="waiting")])
    assert ids(model) == [1, 2]
    assert [t.id for t in model.tasks()] == [2, 1], "the newest list, for the icon and the dashboard"
    leave(panel.table.viewport())
    assert ids(model) == [2, 1]
    enter(panel.table.viewport())
    model.apply([TaskView(id=1, name="a.py", state="waiting")])
    panel.hide()  # deactivated under the pointer: no Leave comes
    assert ids(model) == [1]


def test_without_a_tray_the_window_opens_as_large_as_the_panel_would_be(qtbot: QtBot) -> None:
    """An ordinary window (stock GNOME has no tray) used to open at a scroll area's default 444×338 and
    scroll; it opens at the panel's size on its screen, and grows when the GPUs' cards arrive."""
    from gputray.gui.tray_app import NO_TRAY_NOTE

    panel = Panel(QueueModel(), demo=True, windowed=True)
    qtbot.addWidget(panel)
    panel.set_notice(lambda: tr(NO_TRAY_NOTE))
    panel.show_windowed()  # before the first snapshot, as the app does
    QApplication.processEvents()
    panel.update_snapshot(egpu_snapshot())
    QApplication.processEvents()
    assert not panel.content_scrolls(), panel.size()
    assert audit(panel).problems == []
    panel.resize(panel.width() + 100, panel.height() + 50)  # the user makes it larger: it stays so
    size = panel.size()
    panel.update_snapshot(egpu_snapshot())
    assert panel.size() == size
