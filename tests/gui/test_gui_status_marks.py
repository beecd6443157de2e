"""The doctor's verdicts in the dashboard are drawn marks, not ✅/⚠/❌ (empty boxes without an emoji font)."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from gputray.gui.dashboard import DOCTOR_RESULT_COLUMN, Dashboard
from gputray.gui.status_marks import COLORS, VERDICTS, mark_icon
from gputray.monitor.factory import build_monitor
from gputray.scheduler.pyenvs.doctor_cache import PairResult
from gputray.scheduler.reasons.doctor_codes import Passed

EMOJI = "✅⚠❌\ufe0f"


def pair(verdict: str) -> PairResult:
    return PairResult(
        env_name="torch-cpu",
        python="/usr/bin/python3",
        device_key="cpu",
        device_name="CPU",
        vendor="cpu",
        verdict=verdict,  # type: ignore[arg-type]
        finding=Passed(benched=False),
    )


def dominant(color: QColor) -> str:
    r, g, b = color.red(), color.green(), color.blue()
    if g > r + 40 and g > b:
        return "green"
    if r > g + 80 and r > b:
        return "red"
    if r > 150 and g > 100 and b < 80:
        return "amber"
    return "other"


def test_each_verdict_is_a_drawn_mark_in_its_colour(qapp: object) -> None:
    expected = {"works": "green", "limited": "amber", "fails": "red"}
    for verdict in VERDICTS:
        for ratio in (1.0, 2.0):  # 2×: a HiDPI screen asks the engine for a pixmap twice the size
            image = mark_icon(verdict).pixmap(QSize(32, 32), ratio).toImage()
            side = image.width()
            assert side == int(32 * ratio)
            # a row a little below the centre: inside the disc or triangle, beside the white stroke
            row = [dominant(image.pixelColor(x, side * 5 // 8)) for x in range(side // 8, side * 7 // 8)]
            assert expected[verdict] in row, (verdict, ratio, row)
            assert image.pixelColor(0, 0).alpha() == 0, "a mark on a transparent ground"
    assert set(COLORS) == set(VERDICTS)


def test_the_doctor_table_and_its_progress_line_show_drawn_marks_and_no_emoji(qtbot: QtBot) -> None:
    monitor = build_monitor(demo=True)
    dash = Dashboard(monitor, demo=True)
    qtbot.addWidget(dash)
    dash.show_doctor([pair(v) for v in VERDICTS])
    for row, verdict in enumerate(VERDICTS):
        item = dash.doctor_table.item(row, DOCTOR_RESULT_COLUMN)
        assert item.text() == verdict and not any(c in item.text() for c in EMOJI)
        assert not item.icon().isNull()
    cells = [
        dash.doctor_table.item(r, c).text()
        for r in range(dash.doctor_table.rowCount())
        for c in range(dash.doctor_table.columnCount())
    ]
    assert not any(ch in cell for cell in cells for ch in EMOJI), cells
    # a progress line as scheduler/pyenvs/doctor.py writes it for the CLI
    dash._set_doctor_status_text("torch-cpu × CPU: ✅ works in 1.2 s — matmul 40 GFLOP/s")
    assert dash.doctor_status.text() == "torch-cpu × CPU: works in 1.2 s — matmul 40 GFLOP/s"
    assert not dash.doctor_status_mark.isHidden() and not dash.doctor_status_mark.pixmap().isNull()
    dash._set_doctor_status_text("Doctor finished at 12:00:00")
    assert dash.doctor_status_mark.isHidden()
    monitor.stop()
