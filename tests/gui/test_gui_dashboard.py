from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from gputray.gui.dashboard import Dashboard
from gputray.monitor.factory import build_monitor


def test_dashboard_plots_history_processes_doctor_and_logs(qtbot: QtBot, tmp_path: Path) -> None:
    monitor = build_monitor(demo=True)
    for _ in range(3):
        monitor.sample_once()
    log = tmp_path / "task-1.log"
    log.write_text("=== task 1 ===\nhello from the job\n")
    tasks = [{"id": 1, "name": "a.py", "state": "succeeded", "log_path": str(log)}]
    dash = Dashboard(monitor, tasks=lambda: tasks, demo=True)
    qtbot.addWidget(dash)
    assert dash.windowTitle() == "gputray dashboard — DEMO"
    dash.refresh()
    xs, ys = dash.curves[("pci:0000:01:00.0", "util_percent")].getData()
    assert len(xs) == 3 and xs[-1] == 0.0 and all(0 <= y <= 100 for y in ys)
    vram = dash.curves[("pci:0000:64:00.0", "shared_used_bytes")].getData()[1]
    assert 0 < vram[-1] < 64  # GiB
    assert dash.doctor_table.rowCount() == 0
    assert "No doctor results yet" in dash.doctor_status.text()
    devices = dash.device_table
    assert devices.rowCount() == 2
    row = [devices.item(0, col).text() for col in range(devices.columnCount())]
    assert row[0] == "GeForce RTX 5060 Ti"
    assert row[1].startswith("PCIe 1.0 ×4 of 5.0 ×8 (idle")  # the demo eGPU at idle, on OCuLink
    assert row[3:5] == ["180 W", "405 MHz"] and row[5:] == ["0 %", "0 %"]
    assert [devices.item(1, col).text() for col in (1, 2, 3)] == ["–", "–", "–"]  # the 780M: an APU
    dash.show_log_of(str(log))
    assert dash.tabs.currentIndex() == 3
    assert "hello from the job" in dash.log_view.toPlainText()
    monitor.stop()
