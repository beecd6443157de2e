from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPersistentModelIndex, Qt
from PySide6.QtWidgets import QTableView
from pytestqt.qtbot import QtBot

from gputray.gui.queue_model import (
    COL_DEVICE,
    COL_ELAPSED,
    COL_NAME,
    COL_REASON,
    COL_STATE,
    QueueModel,
    format_duration,
)
from gputray.monitor.busy_why import UtilHigh, Who
from gputray.scheduler.reasons.codes import DemoOnCpu, DeviceBusy, ExitedWith, Said, WaitingFor
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

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


def task(i: int, state: str = "queued", **extra: Any) -> TaskView:
    base: dict[str, Any] = {
        "id": i,
        "name": f"job {i}.png",
        "kind": "vulkan",
        "state": state,
        "device": None,
        "env": None,
        "reason": None,
        "exit_code": None,
        "attempts": 0,
        "submitted_at": 1_764_468_000.0,
        "started_at": None,
        "ended_at": None,
        "log_path": f"/tmp/logs/{i}.log",
    }
    base.update(extra)
    return TaskView(**base)


class Recorder:
    def __init__(self, model: QueueModel) -> None:
        self.resets = 0
        self.changed_rows: list[tuple[int, int]] = []
        self.inserted: list[tuple[int, int]] = []
        self.removed: list[tuple[int, int]] = []
        self.layouts = 0
        model.modelReset.connect(self._reset)
        model.dataChanged.connect(lambda a, b, *_: self.changed_rows.append((a.row(), b.row())))
        model.rowsInserted.connect(lambda _p, a, b: self.inserted.append((a, b)))
        model.rowsRemoved.connect(lambda _p, a, b: self.removed.append((a, b)))
        model.layoutChanged.connect(self._layout)

    def _reset(self) -> None:
        self.resets += 1

    def _layout(self) -> None:
        self.layouts += 1


def test_ten_thousand_rows_update_incrementally(qtbot: QtBot) -> None:
    model = QueueModel()
    view = QTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    rows = [task(i) for i in range(10_000)]
    model.apply(rows)
    assert model.rowCount() == 10_000
    rec = Recorder(model)
    # one task starts running: exactly one row changes, nothing is reset or re-inserted
    rows[5000] = task(5000, "running", device="pci:0000:01:00.0", started_at="2026-11-30T02:00:01.000Z")
    model.apply(rows)
    assert rec.resets == 0 and rec.inserted == [] and rec.removed == [] and rec.layouts == 0
    assert rec.changed_rows == [(5000, 5000)]
    assert model.data(model.index(5000, COL_STATE)) == "running"
    # a new task arrives at the end and an old one is gone
    rows.append(task(10_000))
    del rows[10]
    model.apply(rows)
    assert rec.removed == [(10, 10)]
    assert rec.inserted == [(9999, 9999)]
    assert rec.resets == 0
    assert model.rowCount() == 10_000
    assert model.data(model.index(9999, COL_NAME)) == "job 10000.png"
    assert model.row_of(5000) == 4999


def test_reorder_keeps_the_selection_on_the_same_task(qtbot: QtBot) -> None:
    model = QueueModel()
    rows = [task(i) for i in range(5)]
    model.apply(rows)
    selected = QPersistentModelIndex(model.index(3, 0))
    rec = Recorder(model)
    rows[2], rows[3] = rows[3], rows[2]  # "move up" of task 3
    model.apply(rows)
    assert rec.layouts == 1 and rec.resets == 0
    assert selected.row() == 2
    assert model.data(model.index(2, COL_NAME)) == "job 3.png"


def test_upsert_and_tick_touch_only_what_changed(qtbot: QtBot) -> None:
    model = QueueModel(wall_clock=lambda: 1_700_000_000.0)
    model.apply([task(1), task(2, "running", started_at=1_700_000_000.0 - 75)])
    rec = Recorder(model)
    assert model.tick(1_700_000_000.0) == 1
    assert rec.changed_rows == [(1, 1)]
    assert model.data(model.index(1, COL_ELAPSED)) == "1:15"
    model.upsert(task(3, "waiting", reason=WAITING))
    assert rec.inserted == [(2, 2)]
    assert model.counts() == {"queued": 1, "running": 1, "waiting": 1}
    model.upsert(task(3, "waiting", reason=WAITING))
    assert rec.changed_rows == [(1, 1)]  # identical record: no signal


def test_device_names_and_tooltips() -> None:
    model = QueueModel()
    model.apply([task(1, "failed", device="pci:0000:64:00.0", reason=Said(text="HIP error"), exit_code=3)])
    assert model.data(model.index(0, COL_DEVICE)) == "pci:0000:64:00.0"
    model.set_device_names({"pci:0000:64:00.0": "Radeon 780M"}, {"pci:0000:64:00.0": "AMD Radeon 780M"})
    assert model.data(model.index(0, COL_DEVICE)) == "Radeon 780M"
    tip = Qt.ItemDataRole.ToolTipRole
    assert model.data(model.index(0, COL_STATE), tip) == "failed\nHIP error\nexit status 3"
    assert model.data(model.index(0, COL_DEVICE), tip) == "AMD Radeon 780M"  # the full name
    # every cell can elide, so every cell has its whole text in a tooltip
    for col in range(model.columnCount()):
        shown = model.data(model.index(0, col))
        assert shown == "" or shown in model.data(model.index(0, col), tip)
    model.apply([task(1, "failed", device="pci:0000:64:00.0", reason=ExitedWith(status=3), exit_code=3)])
    assert model.data(model.index(0, COL_STATE), tip) == "failed\nexited with status 3"  # not twice


def test_the_device_cell_names_the_env_a_torch_task_runs_in() -> None:
    model = QueueModel()
    model.set_device_names({"pci:0000:64:00.0": "Radeon 780M"})
    model.apply([task(1, "running", device="pci:0000:64:00.0", env="rocm"), task(2, "queued")])
    assert model.data(model.index(0, COL_DEVICE)) == "Radeon 780M · rocm"
    assert model.data(model.index(1, COL_DEVICE)) == "–"
    assert format_duration(3725) == "1:02:05"


def test_a_task_from_the_owner_shows_how_long_it_ran_from_its_epoch_times() -> None:
    """The owner's reply (TaskView.of a record) carries epoch seconds: a finished task shows started →
    ended, a running one started → now (the model's clock); no time is parsed from text."""
    spec = TaskSpec(kind="command", name="train.py", argv=("python", "train.py"))
    ran = TaskRecord(id=1, spec=spec, state="succeeded", submitted_at=100.0, started_at=1_764_468_000.5,
                     ended_at=1_764_468_000.5 + 3725, device="cpu")  # fmt: skip
    runs = TaskRecord(id=2, spec=spec, state="running", submitted_at=100.0, started_at=1_764_468_000.0)
    model = QueueModel(wall_clock=lambda: 1_764_468_000.0 + 75.4)
    model.apply([TaskView.of(ran), TaskView.of(runs)])
    assert model.data(model.index(0, COL_ELAPSED)) == "1:02:05"
    assert model.data(model.index(1, COL_ELAPSED)) == "1:15"
    assert model.task(0) == TaskView.of(ran) and model.task(0).started_at == 1_764_468_000.5  # type: ignore[union-attr]


def test_a_finished_task_tells_its_gpu_energy_in_its_tooltips() -> None:
    """The row's name and elapsed cells say the energy its run used; a shared one says so; a task with
    none measured says nothing of it."""
    model = QueueModel()
    alone = task(1, "succeeded", started_at=1000.0, ended_at=1060.0, energy_j=1500.0, power_avg_w=25.0)
    shared = task(2, "succeeded", energy_j=12_345.0, energy_shared=True)
    model.apply([alone, shared, task(3, "succeeded")])
    tip = Qt.ItemDataRole.ToolTipRole
    assert (
        model.data(model.index(0, COL_NAME), tip).splitlines()[-1] == "GPU energy: 1500 J (25 W on average)"
    )
    assert model.data(model.index(0, COL_ELAPSED), tip) == "1:00\nGPU energy: 1500 J (25 W on average)"
    assert model.data(model.index(1, COL_NAME), tip).splitlines()[-2:] == [
        "GPU energy: 12.3 kJ",
        "shared: the GPU ran other work too, so this is the whole device's energy",
    ]
    assert "energy" not in model.data(model.index(2, COL_NAME), tip)


def test_a_row_reads_in_the_tense_of_its_state_in_both_languages(qapp: object) -> None:
    """Issue 33 item 10: a demo job an owner adopted after a restart said "running on the CPU" next to
    "succeeded". The row words the task's reason as its state reads it, whoever recorded it."""
    from gputray.gui.i18n import install_language

    note = DemoOnCpu(device="Radeon 780M")
    model = QueueModel()
    model.apply([task(1, "running", reason=note), task(2, "succeeded", reason=note)])
    try:
        for language, running, ran in (
            (
                "en",
                "demo: running on the CPU in place of Radeon 780M",
                "demo: ran on the CPU in place of Radeon 780M",
            ),
            (
                "ja",
                "デモ：Radeon 780M の代わりに CPU で実行中",
                "デモ：Radeon 780M の代わりに CPU で実行しました",
            ),
        ):
            assert install_language(language)
            assert [model.data(model.index(row, COL_REASON)) for row in (0, 1)] == [running, ran]
    finally:
        install_language("en")
