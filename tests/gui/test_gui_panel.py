from __future__ import annotations

from gui_snapshots import KEY_780M, KEY_5060, snapshot
from PySide6.QtCore import QEvent, QMimeData, QPointF, QRect, Qt, QUrl
from PySide6.QtGui import QAction, QDropEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.monitor import busy_why as why
from gputray.scheduler.replies import DeviceSlots, TaskView


def make_panel(qtbot: QtBot, **kw: bool) -> Panel:
    model = QueueModel()
    panel = Panel(model, **kw)
    qtbot.addWidget(panel)
    return panel


def test_cards_show_what_each_gpu_is_doing(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    history = {KEY_5060: [(800.0 + i, float(i % 100)) for i in range(200)], KEY_780M: []}
    panel.update_snapshot(
        snapshot(busy_5060=("llama-server uses 14.2 GiB, 97 %",)),
        lambda key, metric, since: [p for p in history[key] if p[0] >= since],
    )
    assert list(panel.cards) == [KEY_5060, KEY_780M]
    card = panel.cards[KEY_5060]
    assert card.name_label.text() == "GeForce RTX 5060 Ti"
    assert card.metrics_label.text() == "42 %  ·  61 °C  ·  95 W"
    assert card.vram_label.text() == "VRAM 14.2 / 16.0 GiB" and card.shared_label.text() == "shared –"
    assert card.processes_label.text() == "llama-server (4242) 14.2 GiB 97%"
    assert card.busy_label.text() == "busy: llama-server uses 14.2 GiB, 97 %"
    assert card.swatch.color.name() == "#76b900" and panel.cards[KEY_780M].swatch.color.name() == "#ed1c24"
    assert "green bar" in card.swatch.toolTip()
    assert len(card.sparkline.points()) == 200
    igpu = panel.cards[KEY_780M]
    assert igpu.vram_label.text() == "VRAM 1.0 / 4.0 GiB"
    assert igpu.shared_label.text() == "shared 3.0 / 29.0 GiB"
    assert "CPU 12 %" in panel.host_label.text()
    # a GPU that vanishes loses its card
    snap = snapshot()
    only_igpu = snap.__class__(snap.timestamp_s, snap.readings[1:], snap.host)
    panel.update_snapshot(only_igpu)
    assert list(panel.cards) == [KEY_780M]


def test_cards_show_jobs_running_and_slots(qtbot: QtBot) -> None:
    """The queue's slots per device (config `[devices.<name>] slots`) show on each card and for the CPU,
    whether the listing or the first sample comes first."""
    panel = make_panel(qtbot)
    panel.set_jobs([DeviceSlots(key=KEY_5060, running=1, slots=2, name="GeForce RTX 5060 Ti", paused=False)])
    panel.update_snapshot(snapshot())
    assert panel.cards[KEY_5060].jobs_label.text().startswith("jobs 1/2")
    panel.set_jobs(
        [
            DeviceSlots(key=KEY_5060, name="", running=0, slots=2, paused=False),
            DeviceSlots(key=KEY_780M, name="", running=1, slots=1, paused=False),
            DeviceSlots(key="cpu", name="CPU", running=3, slots=4, paused=False),
        ]
    )
    assert panel.cards[KEY_5060].jobs_label.text().startswith("jobs 0/2")
    assert panel.cards[KEY_780M].jobs_label.text().startswith("jobs 1/1")
    panel.update_snapshot(snapshot())
    assert panel.host_label.text().endswith("jobs 3/4") and "CPU 12 %" in panel.host_label.text()


def test_demo_title_and_hot_style(qtbot: QtBot) -> None:
    panel = make_panel(qtbot, demo=True)
    assert panel.windowTitle() == "gputray — DEMO" and panel.title_label.text() == "gputray — DEMO"
    panel.update_snapshot(snapshot(temp_5060=91.0))
    assert "c62828" in panel.cards[KEY_5060].metrics_label.styleSheet()
    panel.set_demo(False)
    assert panel.windowTitle() == "gputray"


def test_flags_tool_window_not_popup(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    flags = panel.windowFlags()
    assert flags & Qt.WindowType.Tool == Qt.WindowType.Tool
    assert flags & Qt.WindowType.FramelessWindowHint
    assert flags & Qt.WindowType.WindowType_Mask != Qt.WindowType.Popup
    windowed = make_panel(qtbot, windowed=True)
    assert windowed.windowFlags() & Qt.WindowType.WindowType_Mask == Qt.WindowType.Window
    assert windowed.pinned


def test_hides_on_deactivate_unless_pinned(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.show()
    QApplication.sendEvent(panel, QEvent(QEvent.Type.WindowDeactivate))
    assert not panel.isVisible() and panel.hidden_by_deactivate_at is not None
    panel.pin_button.click()
    panel.show()
    QApplication.sendEvent(panel, QEvent(QEvent.Type.WindowDeactivate))
    assert panel.isVisible()


def test_queue_buttons_emit_the_selected_task(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.model.apply(
        [
            TaskView(id=7, name="a.png", state="waiting", log_path="/tmp/7.log"),
            TaskView(id=8, name="b.png", state="queued", log_path="/tmp/8.log"),
        ]
    )
    panel.table.selectRow(1)
    with qtbot.waitSignal(panel.cancel_requested) as cancel:
        panel.cancel_button.click()
    assert cancel.args == [[8]]
    with qtbot.waitSignal(panel.move_requested) as move:
        panel.up_button.click()
    assert move.args == [8, -1]
    with qtbot.waitSignal(panel.open_log_requested) as opened:
        panel.log_button.click()
    assert opened.args == ["/tmp/8.log"]
    with qtbot.waitSignal(panel.pause_requested) as paused:
        panel.pause_all_button.click()
    assert paused.args == [None]
    panel.set_paused(True, [KEY_780M])
    assert panel.pause_all_button.text() == "Resume queue"
    panel.update_snapshot(snapshot())
    panel.set_paused(True, [KEY_780M])
    assert panel.cards[KEY_780M].pause_button.isChecked()
    with qtbot.waitSignal(panel.resume_requested) as resumed:
        panel.cards[KEY_780M].pause_button.click()
    assert resumed.args == [KEY_780M]


def test_dropping_files_on_the_panel(qtbot: QtBot, tmp_path: object) -> None:
    """A QDropEvent delivered in-process (the real XDND drag is covered by the X11 e2e test's notes)."""
    panel = make_panel(qtbot)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile("/tmp/a b.png"), QUrl.fromLocalFile("/tmp/写真.jpg")])
    event = QDropEvent(
        QPointF(20, 20),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(panel.files_dropped) as dropped:
        panel.dropEvent(event)
    assert dropped.args == [["/tmp/a b.png", "/tmp/写真.jpg"]]


def test_row_menu_offers_what_fits_the_task(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.model.apply(
        [
            TaskView(id=7, name="a.png", state="waiting", log_path=None),
            TaskView(id=8, name="b.png", state="queued"),
            TaskView(id=9, name="c.png", state="failed", log_path="/tmp/9.log"),
        ]
    )

    def entries(row: int) -> dict[str, bool]:
        menu = panel.row_menu(row)
        out = {a.text(): a.isEnabled() for a in menu.actions() if a.text()}
        priority = next(a.menu() for a in menu.actions() if a.menu() is not None)
        out.update(
            {f"priority: {a.text()}": a.isEnabled() and priority.isEnabled() for a in priority.actions()}
        )
        return out

    waiting = entries(0)
    assert waiting["Cancel"] and not waiting["Retry"] and not waiting["Open log"]
    assert waiting["priority: First in the queue"] and waiting["priority: Last in the queue"]
    failed = entries(2)
    assert failed["Retry"] and failed["Open log"] and not failed["Cancel"]
    assert not failed["priority: Up one"]  # only waiting tasks move
    # the menu acts on the row it was opened on
    menu = panel.row_menu(1)
    priority = next(a.menu() for a in menu.actions() if a.menu() is not None)
    with qtbot.waitSignal(panel.move_requested) as moved:
        next(a for a in priority.actions() if a.text() == "First in the queue").trigger()
    assert moved.args == [8, -2]  # two tasks wait: to the top
    with qtbot.waitSignal(panel.cancel_requested) as cancelled:
        next(a for a in menu.actions() if a.text() == "Cancel").trigger()
    assert cancelled.args == [[8]]
    menu = panel.row_menu(2)
    with qtbot.waitSignal(panel.retry_requested) as retried:
        next(a for a in menu.actions() if a.text() == "Retry").trigger()
    assert retried.args == [9]
    with qtbot.waitSignal(panel.open_log_requested) as opened:
        next(a for a in menu.actions() if a.text() == "Open log").trigger()
    assert opened.args == ["/tmp/9.log"]


def test_row_menu_pauses_and_resumes_one_running_job(qtbot: QtBot) -> None:
    """Pause job on a running row, Resume job on a paused one (shown "paused"), neither elsewhere."""
    panel = make_panel(qtbot)
    panel.model.apply(
        [
            TaskView(id=3, name="train.py", state="running"),
            TaskView(id=4, name="big.py", state="running", paused_at=1.8e9, reason="paused by you at 14:02"),
            TaskView(id=5, name="later.py", state="queued"),
            TaskView(id=6, name="there.py", state="running", machine="lab"),
        ]
    )  # fmt: skip
    shown = [panel.model.task(r) for r in range(4)]
    rows = {t.id: r for r, t in enumerate(shown) if t is not None}
    paused_row = shown[rows[4]]
    assert paused_row is not None and panel.model.display(paused_row, 1) == "paused"

    def action(task_id: int) -> QAction:
        menu = panel.row_menu(rows[task_id])
        return next(a for a in menu.actions() if a.text() in ("Pause job", "Resume job"))

    assert action(3).text() == "Pause job" and action(3).isEnabled()
    with qtbot.waitSignal(panel.pause_job_requested) as asked:
        action(3).trigger()
    assert asked.args == [3, True]
    assert action(4).text() == "Resume job" and action(4).isEnabled()
    with qtbot.waitSignal(panel.pause_job_requested) as asked:
        action(4).trigger()
    assert asked.args == [4, False]
    assert not action(5).isEnabled()  # not running
    assert not action(6).isEnabled()  # another machine runs it


def test_cards_keep_their_height_whatever_their_gpu_does(qtbot: QtBot) -> None:
    """Busy lines and process lines come and go; the card (and so the queue below it) stays put."""
    panel = make_panel(qtbot)
    panel.resize(470, 700)
    panel.show()
    heights = []
    for busy in ((), ("llama-server uses 14.2 GiB, 97 %",), ("a; very; long; " * 20,)):
        snap = snapshot(busy_5060=busy)
        if not busy:
            snap = snap.__class__(
                snap.timestamp_s, snap.readings, snap.host, processes=(), verdicts=snap.verdicts
            )
        panel.update_snapshot(snap)
        QApplication.processEvents()
        card = panel.cards[KEY_5060]
        heights.append(card.sizeHint().height())
        assert card.busy_label.toolTip() == "" or card.busy_label.text() in card.busy_label.toolTip()
    assert len(set(heights)) == 1, heights
    long_line = panel.cards[KEY_5060].busy_label
    assert long_line.is_elided() and long_line.text() in long_line.toolTip()


def test_drop_zone_says_to_pin_before_dragging(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    assert "Pin the panel first" in panel.drop_zone.hint.text()
    panel.pin_button.click()
    assert panel.pinned and "stays open" in panel.drop_zone.hint.text()


def test_queue_columns_fit_their_headers_and_device_names(qtbot: QtBot) -> None:
    from gputray.gui.layout_audit import audit

    panel = make_panel(qtbot)
    panel.model.apply([TaskView(id=1, name="a.py", state="interrupted", device=KEY_780M)])
    panel.model.set_device_names({KEY_780M: "Radeon 780M"})
    panel.fit_columns()
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    assert audit(panel).problems == []
    fm = panel.table.fontMetrics()
    assert panel.table.columnWidth(2) >= fm.horizontalAdvance("Radeon 780M") + 8  # not "Radeon 7…"


def test_card_shows_the_egpu_readings_and_hides_them_when_there_are_none(qtbot: QtBot) -> None:
    from dataclasses import replace

    panel = make_panel(qtbot)
    snap = snapshot()
    egpu, igpu = snap.readings
    loaded = replace(
        egpu.sample,
        util_percent=95.0,
        **dict(pcie_gen=4, pcie_width=4, pcie_max_gen=5, pcie_max_width=8, fan_percent=31.0, fan_rpm=1180),
        **dict(power_limit_w=180.0, mclk_mhz=14001, encoder_percent=12.0, decoder_percent=34.0),
    )
    readings = (replace(egpu, sample=loaded), igpu)
    panel.update_snapshot(replace(snap, readings=readings))
    card = panel.cards[KEY_5060]
    # the readings line under the memory: link, fan, limit, clocks, video engines while busy
    assert card.extras_label.text() == (
        "PCIe 4.0 ×4 of 5.0 ×8  ·  fan 31 % 1180 RPM  ·  limit 180 W  ·  mem 14001 MHz"
        "  ·  enc 12 %  ·  dec 34 %"
    )
    assert card.extras_label.toolTip().startswith(  # all of it, in full (then the line itself, if elided)
        "PCIe 4.0 ×4 of 5.0 ×8  ·  fan 31 % 1180 RPM  ·  limit 180 W  ·  mem 14001 MHz"
        "  ·  enc 12 %  ·  dec 34 %"
    )
    idle = replace(loaded, util_percent=0.0, pcie_gen=1)
    panel.update_snapshot(replace(snap, readings=(replace(egpu, sample=idle), igpu)))
    assert card.extras_label.text().startswith("PCIe 1.0 ×4 of 5.0 ×8 (idle)  ·  fan 31 % 1180 RPM")
    assert "(idle: links slow down to save power)" in card.extras_label.toolTip()
    blank = replace(igpu.sample, mclk_mhz=None)
    panel.update_snapshot(replace(snap, readings=(egpu, replace(igpu, sample=blank))))
    assert panel.cards[KEY_780M].extras_label.text() == ""  # nothing reported: nothing shown
    # a GPU that cannot be read says so on that line; its figures line says only the state's word
    lost = replace(egpu.sample, state="lost", reason=why.FellOffBus())
    panel.update_snapshot(replace(snap, readings=(replace(egpu, sample=lost), igpu)))
    assert card.metrics_label.text() == "lost" and card.extras_label.text() == "lost: fell off the bus"


def test_a_gpu_the_simulated_backend_loses_is_said_lost_in_the_trays_language(qtbot: QtBot) -> None:
    """#31: the backend's own words ("GPU is lost (fell off the bus?)") were English inside the Japanese
    card and notice. A real monitor over the simulated backend loses the 5060 Ti: the card and the
    notice say so in the language shown, and nothing in them is English in Japanese."""
    from ui_walk import english_words

    from gputray.gui.i18n import install_language
    from gputray.gui.messages import reason
    from gputray.monitor.backends.simulated import SimulatedBackend
    from gputray.monitor.monitor import Monitor
    from gputray.monitor.scenario import Load, Scenario

    clock = [0.0]
    lost_at_5 = Scenario((Load("5060ti", 5, 60, 0, state="lost"),))
    monitor = Monitor([SimulatedBackend(lost_at_5, lambda: clock[0])], clock=lambda: clock[0])
    monitor.sample_once()
    clock[0] = 6.0
    snap = monitor.sample_once()
    (event,) = [e for e in snap.events if e.kind == "lost"]
    assert snap.reading(KEY_5060).sample.reason == why.FellOffBus()  # type: ignore[union-attr]
    panel = make_panel(qtbot)
    try:
        for language, card_text, notice in [
            ("en", "lost: fell off the bus", "GeForce RTX 5060 Ti was lost: fell off the bus"),
            (
                "ja",
                "失われました: バスから外れました",
                "GeForce RTX 5060 Ti が失われました: バスから外れました",
            ),
        ]:
            assert install_language(language)
            panel.update_snapshot(snap)
            card = panel.cards[KEY_5060]
            assert card.extras_label.text() == card_text
            assert reason(event.message) == notice
            if language == "ja":
                words = card.extras_label.text() + " " + reason(event.message)
                assert english_words(words, data=["GeForce RTX 5060 Ti"]) == [], words
    finally:
        install_language("en")


def test_the_elided_readings_tooltip_is_said_once_and_follows_the_line_while_open(qtbot: QtBot) -> None:
    """Issue 33 item 14: the elided PCIe / fan line's tooltip said the line twice in near-identical
    words, and kept "fan 30 %" while the line said 60 %."""
    from dataclasses import replace

    from PySide6.QtGui import QCursor
    from PySide6.QtWidgets import QToolTip

    panel = make_panel(qtbot)
    panel.show()
    snap = snapshot()
    egpu, igpu = snap.readings

    def with_fan(percent: float) -> object:
        sample = replace(
            egpu.sample,
            **dict(
                pcie_gen=4, pcie_width=4, pcie_max_gen=5, pcie_max_width=8, fan_percent=percent, fan_rpm=900
            ),
            **dict(power_limit_w=180.0, mclk_mhz=14001, encoder_percent=12.0, decoder_percent=34.0),
        )
        return replace(snap, readings=(replace(egpu, sample=sample), igpu))

    panel.update_snapshot(with_fan(30.0))
    label = panel.cards[KEY_5060].extras_label
    label.setFixedWidth(120)  # elided
    QApplication.processEvents()
    assert label.is_elided()
    tip = label.toolTip()
    assert "fan 30 %" in tip and tip.count("fan 30 %") == 1, tip  # once, at length
    QCursor.setPos(label.mapToGlobal(label.rect().center()))
    QToolTip.showText(QCursor.pos(), tip, label)
    qtbot.waitUntil(QToolTip.isVisible, timeout=2000)
    panel.update_snapshot(with_fan(60.0))
    assert "fan 60 %" in label.text()
    assert "fan 60 %" in QToolTip.text() and "fan 30 %" not in QToolTip.text()
    QToolTip.hideText()


def test_device_cells_are_whole_where_the_panel_has_room(qtbot: QtBot) -> None:
    """Issue 33 item 14: "Radeon 780M · torch-cpu" showed as "Radeon 780…" beside short task names."""
    from gputray.gui.queue_model import COL_DEVICE

    panel = make_panel(qtbot)
    panel.model.apply(
        [
            TaskView(id=1, name="a.py", state="running", device=KEY_780M, env="torch-cpu"),
            TaskView(id=2, name="b.py", state="succeeded", device=KEY_5060, env="cu128-nightly"),
        ]
    )
    panel.model.set_device_names({KEY_780M: "Radeon 780M", KEY_5060: "RTX 5060 Ti"})
    panel.fit_columns()
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    fm = panel.table.fontMetrics()
    for text in ("Radeon 780M · torch-cpu", "RTX 5060 Ti · cu128-nightly"):
        assert fm.horizontalAdvance(text) + 8 <= panel.table.columnWidth(COL_DEVICE), text


def test_the_queue_line_counts_a_paused_job_apart_from_the_running_ones(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.model.apply(
        [
            TaskView(id=1, name="long training", state="running", paused_at=5.0),  # paused for #2
            TaskView(id=2, name="urgent render", state="running"),
            TaskView(id=3, name="later", state="waiting"),
        ]
    )
    panel.update_queue_label()
    assert panel.queue_label.text() == "Queue: 1 running, 1 paused, 1 waiting"  # it said "2 running"
    panel.model.apply([TaskView(id=2, name="urgent render", state="running")])
    panel.update_queue_label()
    assert panel.queue_label.text() == "Queue: 1 running, 0 waiting"
