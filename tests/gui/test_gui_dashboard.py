from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from gputray.gui.dashboard import Dashboard
from gputray.monitor.factory import build_monitor
from gputray.scheduler.reasons.codes import DevicePaused, WaitingFor
from gputray.scheduler.replies import TaskView

KEY_5060, KEY_780M = "pci:0000:01:00.0", "pci:0000:64:00.0"


def test_dashboard_plots_history_processes_doctor_and_logs(qtbot: QtBot, tmp_path: Path) -> None:
    monitor = build_monitor(demo=True)
    for _ in range(3):
        monitor.sample_once()
    log = tmp_path / "task-1.log"
    log.write_text("=== task 1 ===\nhello from the job\n")
    tasks = [
        TaskView(id=1, name="a.py", state="succeeded", log_path=str(log), energy_j=850.0, power_avg_w=21.0),
        TaskView(
            id=2,
            name="b.py",
            state="waiting",
            reason=WaitingFor(label="GeForce RTX 5060 Ti", why=DevicePaused()),
        ),
        TaskView(id=3, name="c.py", state="running", started_at=1.0, progress=0.45, eta_s=25.0),
        TaskView(
            id=4, name="d.py", state="running", started_at=1.0, progress=0.45, eta_s=25.0, paused_at=2.0
        ),
    ]
    dash = Dashboard(monitor, tasks=lambda: tasks, demo=True)
    qtbot.addWidget(dash)
    assert dash.windowTitle() == "gputray dashboard — DEMO"
    dash.refresh()
    xs, ys = dash.curves[(KEY_5060, "util_percent")].getData()
    assert len(xs) == 3 and xs[-1] == 0.0 and all(0 <= y <= 100 for y in ys)
    shared = dash.curves[(KEY_780M, "shared_used_bytes")].getData()[1]
    assert 0 < shared[-1] < 64  # GiB
    assert dash.doctor_table.rowCount() == 0
    assert "No doctor results yet" in dash.doctor_status.text()
    devices = dash.device_table
    assert devices.rowCount() == 2
    row = [devices.item(0, col).text() for col in range(devices.columnCount())]
    assert row[0] == "GeForce RTX 5060 Ti"
    assert row[1].startswith("PCIe 1.0 ×4 of 5.0 ×8 (idle")  # the demo eGPU at idle, on OCuLink
    assert row[3:5] == ["180 W", "405 MHz"] and row[5:] == ["0 %", "0 %"]
    assert [devices.item(1, col).text() for col in (1, 2, 3)] == ["—", "—", "—"]  # the 780M: an APU
    dash.show_log_of(str(log))
    assert dash.tabs.currentIndex() == 3
    assert "hello from the job" in dash.log_view.toPlainText()
    # waiting tasks are listed too, and say why they wait until they have a log
    assert [dash.task_list.item(i).text() for i in range(dash.task_list.count())] == [
        "#1 a.py — succeeded · 850 J",  # the GPU energy its run used
        "#2 b.py — waiting",
        "#3 c.py — running · \u2588\u2588\u2588\u2588\u2591\u2591\u2591\u2591\u2591\u2591 45%, ~25 s left",
        "#4 d.py — paused",  # its job is frozen: no time left, and not "running"
    ]
    assert dash.task_list.item(0).toolTip().splitlines()[-1] == "GPU energy: 850 J (21 W on average)"
    dash.task_list.setCurrentRow(1)
    assert dash.log_view.toPlainText().splitlines() == [
        "#2 b.py has not started yet.",
        "State: waiting",
        "Why: waiting for GeForce RTX 5060 Ti: paused",
    ]
    monitor.stop()


def test_axes_start_at_zero_and_end_at_the_totals_with_their_lines(qtbot: QtBot) -> None:
    monitor = build_monitor(demo=True)
    monitor.sample_once()
    dash = Dashboard(monitor)
    qtbot.addWidget(dash)
    dash.refresh()
    snap = monitor.latest
    assert snap is not None
    vram_5060 = next(r for r in snap.readings if r.info.key == KEY_5060).info.vram_total_bytes
    assert vram_5060 is not None
    assert dash.y_ranges["util_percent"] == (0.0, 100.0)
    low, high = dash.y_ranges["vram_used_bytes"]
    assert low == 0.0 and vram_5060 / 2**30 < high <= vram_5060 / 2**30 * 1.1  # the largest card, with room
    assert dash.y_ranges["shared_used_bytes"][0] == 0.0  # never below 0 (it once ran to -0.2 GiB)
    lines = {key: round(line.value(), 1) for key, line in dash.limit_lines.items()}
    assert lines[(KEY_5060, "vram_used_bytes")] == round(vram_5060 / 2**30, 1)  # its total
    for r in snap.readings:  # the limits the monitor judges "hot" by
        assert lines[(r.info.key, "temp_c")] == round(monitor.verdicts.temp_limit_c(r), 1)
    assert (KEY_780M, "shared_used_bytes") in lines
    assert dash.y_ranges["temp_c"][1] > 90.0  # the highest limit line shows
    # power: a dashed line at the limit of each GPU that reports one (the simulated 5060 Ti: 180 W)
    assert lines[(KEY_5060, "power_w")] == 180.0 and (KEY_780M, "power_w") not in lines
    assert dash.y_ranges["power_w"][1] > 180.0
    # and docs/gui.md says so (it used to say that power had no limit line)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "gui.md").read_text(encoding="utf-8")
    assert "no limit line" not in doc and "on the power plot the power limit of each GPU" in doc
    # the plots line up: one left-axis width for all, so their time axes start at one x
    dash.show()
    qtbot.waitUntil(lambda: {p.getAxis("left").width() for p in dash.plots.values()} == {72.0}, timeout=5000)
    lefts = {round(p.getViewBox().sceneBoundingRect().left()) for p in dash.plots.values()}
    assert len(lefts) == 1, lefts
    # the curves use the legend's colours (the icon's bars)
    assert dash.curves[(KEY_5060, "util_percent")].opts["pen"].color().name() == "#76b900"
    assert dash.curves[(KEY_780M, "util_percent")].opts["pen"].color().name() == "#ed1c24"
    monitor.stop()


def test_doctor_without_an_environment_keeps_its_hint_and_a_settings_button(
    qtbot: QtBot, gputray_home: Path
) -> None:
    """Issue 33 item 6: Run doctor with no environment left "Doctor finished at …" over an empty table;
    the hint to add one stays, with a button that opens Settings. Item 14: with an environment, the
    finish line follows a switch to Japanese and back (it stayed "診断完了 …" in English)."""
    import sys

    from PySide6.QtCore import QCoreApplication, QEvent, Qt

    from gputray.gui.i18n import install_language
    from gputray.scheduler.pyenvs.registry import add_env

    monitor = build_monitor(demo=True)
    monitor.sample_once()
    dash = Dashboard(monitor, demo=True)
    qtbot.addWidget(dash)
    dash.show()

    def finished() -> bool:
        return (
            dash._doctor_thread is not None
            and not dash._doctor_thread.is_alive()
            and dash.doctor_button.isEnabled()
        )

    dash.run_doctor()
    qtbot.waitUntil(finished, timeout=60_000)
    qtbot.wait(50)  # the queued signals of the thread's last lines
    assert dash.doctor_table.rowCount() == 0
    assert dash.doctor_status.text() == "No doctor results yet: add a Python environment in Settings."
    assert dash.doctor_settings_button.isVisible()
    with qtbot.waitSignal(dash.settings_requested):
        qtbot.mouseClick(dash.doctor_settings_button, Qt.MouseButton.LeftButton)

    add_env(Path(sys.executable), name="plain")  # no torch: the doctor says so, per device
    dash.run_doctor()
    qtbot.waitUntil(finished, timeout=120_000)
    qtbot.waitUntil(lambda: dash.doctor_status.text().startswith("Doctor finished at "), timeout=5000)
    assert dash.doctor_table.rowCount() >= 1 and not dash.doctor_settings_button.isVisible()
    table = dash.doctor_table
    for row in range(table.rowCount()):  # device names whole ("CPU (Intel(R) Xeon(R) …" was cut)
        name = table.item(row, 1).text()
        assert table.fontMetrics().horizontalAdvance(name) + 8 <= table.columnWidth(1), name
    stamp = dash.doctor_status.text().removeprefix("Doctor finished at ")
    try:
        install_language("ja")
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LanguageChange)
        assert (
            dash.doctor_status.text() != f"Doctor finished at {stamp}" and stamp in dash.doctor_status.text()
        )
    finally:
        install_language("en")
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LanguageChange)
    assert dash.doctor_status.text() == f"Doctor finished at {stamp}"
    monitor.stop()
