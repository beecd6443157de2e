"""The tray in a cluster (issue 15): the panel groups GPUs by machine, a machine that left says since
when, and the drop dialog offers "Run on" this machine, any machine or another one by name.

The cluster is three machines as the cluster code reports them (``cluster_views``): desk (this one),
laptop (online, two GPUs), nas (left at 14:02 Japan time; the tests run with ``TZ=JST-9``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cluster_views import NOW_S, TZ, hide_ray, join, report_as_the_bridge, three_machines
from gui_snapshots import KEY_5060, snapshot
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot
from ui_walk import widget_texts

from gputray.gui.app import build_parser
from gputray.gui.drops import DropConfirmDialog, DropOutcome, DropPlan, plan_drop
from gputray.gui.layout_audit import audit
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.gui.tray_app import TrayApp
from gputray.scheduler.paths import app_paths
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.recipes import load_recipes
from gputray.scheduler.tasks.records import TaskPatch

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "panel-cluster.png"


@pytest.fixture
def japan_time() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", TZ)
        time.tzset()
        yield
    time.tzset()


def make_panel(qtbot: QtBot) -> Panel:
    panel = Panel(QueueModel())
    qtbot.addWidget(panel)
    panel.update_snapshot(snapshot())
    return panel


def shown_texts(panel: Panel) -> list[str]:
    """The texts of the panel's widgets that are on screen (hidden ones do not count)."""
    from PySide6.QtWidgets import QAbstractButton, QLabel

    out = []
    for w in panel.content.findChildren(QLabel) + panel.content.findChildren(QAbstractButton):
        if w.isVisibleTo(panel) and w.text():
            out.append(w.text())
    return out


def test_the_panel_groups_gpus_by_machine_and_says_since_when_one_is_offline(
    qtbot: QtBot, japan_time: None
) -> None:
    panel = make_panel(qtbot)
    panel.set_cluster(three_machines(app_paths()), NOW_S)
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    # this machine: its header above its full cards, as before
    assert panel.local_machine.name_label.text() == "desk"
    assert panel.local_machine.state_label.text() == "this machine"
    assert list(panel.cards) == [KEY_5060, "pci:0000:64:00.0"]
    assert panel.local_machine.y() < panel.cards[KEY_5060].y()
    # the others below, by name, each with its GPUs
    groups = panel.cluster_section.groups
    assert list(groups) == ["laptop", "nas"]
    laptop, nas = groups["laptop"], groups["nas"]
    assert laptop.mapTo(panel.content, laptop.rect().topLeft()).y() > panel.host_label.y()
    assert laptop.state_label.isHidden()  # online, nothing to say
    cards = list(laptop.cards.values())
    assert [c.name_label.text() for c in cards] == ["GeForce RTX 4070 Laptop GPU", "Radeon 890M"]
    assert cards[0].state_label.text() == "busy" and cards[1].state_label.isHidden()
    assert cards[0].metrics_label.text() == "97 %  ·  71 °C  ·  VRAM 7.1/8.0 GiB"
    assert cards[1].metrics_label.text() == "0 %  ·  —  ·  VRAM 0.5/2.0 GiB"  # no temperature: "—"
    tip = cards[0].name_label.toolTip()
    assert "busy: llama-server holds 7.0 GiB and the GPU is at 97 %" in tip and "upscale.py (#7)" in tip
    assert cards[1].name_label.toolTip() == "not in use by other programs"
    # the machine that left: its header says since when (local time), and it has no cards
    assert nas.name_label.text() == "nas" and nas.state_label.text() == "offline since 14:02"
    assert nas.cards == {}
    assert "offline since 14:02" in shown_texts(panel)
    # the next day it says the date too
    panel.set_cluster(three_machines(app_paths()), NOW_S + 24 * 3600)
    assert nas.state_label.text() == "offline since 2026-12-02 14:02"
    report = audit(panel)
    assert report.problems == []
    assert report.primary >= 6 + 2  # this machine's figures, and each other GPU's line, whole
    assert all(c.metrics_label.text() in shown_texts(panel) for c in cards)


def test_with_the_ray_head_away_the_others_show_offline(qtbot: QtBot, japan_time: None) -> None:
    """The bridge still talks to the owner but has not reached the head for a minute: nothing it
    says about the other machines is current, so they show as offline and this machine says why."""
    panel = make_panel(qtbot)
    panel.set_cluster(three_machines(app_paths(), head_ok=False), NOW_S)
    assert panel.local_machine.state_label.text() == "this machine, not connected to the cluster"
    groups = panel.cluster_section.groups
    assert groups["laptop"].state_label.text() == "offline" and groups["laptop"].cards == {}
    assert groups["nas"].state_label.text() == "offline since 14:02"
    # the head answers again: laptop's GPUs are back
    panel.set_cluster(three_machines(app_paths()), NOW_S)
    assert list(groups["laptop"].cards) == ["pci:0000:01:00.0", "pci:0000:05:00.0"]
    assert panel.local_machine.state_label.text() == "this machine"


def test_readings_update_in_place_and_the_panel_keeps_its_size(qtbot: QtBot, japan_time: None) -> None:
    panel = make_panel(qtbot)
    panel.set_cluster(three_machines(app_paths()), NOW_S)
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    size, card = panel.size(), panel.cluster_section.groups["laptop"].cards["pci:0000:01:00.0"]
    panel.set_cluster(three_machines(app_paths(), util_4070=12.0), NOW_S)
    QApplication.processEvents()
    assert panel.cluster_section.groups["laptop"].cards["pci:0000:01:00.0"] is card
    assert card.metrics_label.text().startswith("12 %")
    assert panel.size() == size


def test_not_in_a_cluster_the_panel_is_as_before(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    before_texts, before_size = shown_texts(panel), panel.size()
    panel.set_cluster(None)
    QApplication.processEvents()
    assert shown_texts(panel) == before_texts and panel.size() == before_size
    assert panel.local_machine.isHidden() and panel.cluster_section.isHidden()
    # joining shows the machines; leaving gives back exactly the panel from before
    panel.set_cluster(three_machines(app_paths()), NOW_S)
    QApplication.processEvents()
    assert panel.size().height() > before_size.height() and "nas" in shown_texts(panel)
    panel.set_cluster(None)
    QApplication.processEvents()
    assert shown_texts(panel) == before_texts and panel.size() == before_size


def test_screenshot_of_the_panel_with_three_machines(qtbot: QtBot, japan_time: None, tmp_path: Path) -> None:
    """docs/screenshots/panel-cluster.png (with GPUTRAY_UPDATE_SCREENSHOTS=1)."""
    panel = make_panel(qtbot)
    history = [(1000.0 - 299 + i, 40.0 + 30.0 * ((i // 20) % 2)) for i in range(300)]
    panel.update_snapshot(snapshot(), lambda key, metric, since: history if key == KEY_5060 else [])
    panel.model.set_device_names({KEY_5060: "RTX 5060 Ti"})
    panel.model.apply(
        [
            TaskView(id=7, name="upscale.py", state="running", device=KEY_5060, started_at=NOW_S - 75),
            TaskView(id=8, name="train.py", state="queued"),
        ]
    )
    panel.model.tick(NOW_S)
    panel.update_queue_label()
    panel.set_cluster(three_machines(app_paths()), NOW_S)
    panel.show_at(QRect(1200, 770, 24, 24))
    QApplication.processEvents()
    out = tmp_path / "panel-cluster.png"
    assert panel.grab().save(str(out))
    assert audit(panel).problems == []
    if os.environ.get("GPUTRAY_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.write_bytes(out.read_bytes())


# --- the drop dialog --------------------------------------------------------------------------------


def one_py(tmp_path: Path) -> DropPlan:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    return plan_drop([str(script)], load_recipes())


def test_outside_a_cluster_the_drop_dialog_has_no_run_on(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = DropConfirmDialog(one_py(tmp_path), {})
    qtbot.addWidget(dialog)
    assert dialog.machine_box is None and "Run on:" not in widget_texts(dialog)
    assert dialog.choices()[".py"].machine is None


def test_in_a_cluster_the_drop_dialog_offers_this_any_and_each_other_machine(
    qtbot: QtBot, tmp_path: Path
) -> None:
    dialog = DropConfirmDialog(one_py(tmp_path), {}, machines=["laptop"])
    qtbot.addWidget(dialog)
    box = dialog.machine_box
    assert box is not None and "Run on:" in widget_texts(dialog)
    assert [box.itemText(i) for i in range(box.count())] == ["this machine", "any machine", "laptop"]
    assert dialog.choices()[".py"].machine is None  # this machine is the default
    box.setCurrentIndex(2)
    assert dialog.choices()[".py"].machine == "laptop"


def test_a_remembered_run_on_applies_to_the_next_drop_of_that_type(tmp_path: Path) -> None:
    from gputray.gui.drops import DropChoice, handle_drop
    from gputray.gui.gui_state import GuiState

    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    state = GuiState(tmp_path / "state.json")
    submitted: list[TaskPatch] = []

    def submit(files: list[str], recipe: str | None, overrides: TaskPatch) -> list[object]:
        submitted.append(overrides)
        return [len(submitted)]

    def ask(plan: DropPlan, known: object) -> dict[str, DropChoice]:
        return {".py": DropChoice("torch", "recipe", remember=True, machine="any")}

    handle_drop([str(script)], recipes=load_recipes(), submit=submit, ask=ask, state=state)
    handle_drop([str(script)], recipes=load_recipes(), submit=submit, ask=None, state=state)
    assert submitted == [TaskPatch(machine="any")] * 2  # as `submit --machine any` sets it
    assert GuiState(tmp_path / "state.json").get("drop_choices")[".py"]["machine"] == "any"


def test_a_remembered_machine_that_is_gone_is_asked_again(tmp_path: Path) -> None:
    """ "Run on laptop", remembered: after `gputray cluster leave` (or with the laptop gone) every drop
    of that type was refused ("not in a cluster") with no dialog to choose again; now it asks."""
    from gputray.gui.drops import DropChoice, handle_drop
    from gputray.gui.gui_state import GuiState

    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    state = GuiState(tmp_path / "state.json")
    submitted: list[TaskPatch] = []
    asked: list[object] = []

    def submit(files: list[str], recipe: str | None, overrides: TaskPatch) -> list[object]:
        submitted.append(overrides)
        return [len(submitted)]

    def ask(machine: str | None) -> Callable[[DropPlan, object], dict[str, DropChoice]]:
        def answer(plan: DropPlan, known: object) -> dict[str, DropChoice]:
            asked.append(machine)
            return {".py": DropChoice("torch", "recipe", remember=True, machine=machine)}

        return answer

    drop = [str(script)]
    handle_drop(
        drop, recipes=load_recipes(), submit=submit, ask=ask("laptop"), state=state, machines=["laptop"]
    )
    handle_drop(drop, recipes=load_recipes(), submit=submit, ask=ask("x"), state=state, machines=["laptop"])
    assert asked == ["laptop"] and submitted == [TaskPatch(machine="laptop")] * 2  # remembered: not asked
    handle_drop(drop, recipes=load_recipes(), submit=submit, ask=ask(None), state=state, machines=None)
    assert asked == ["laptop", None] and submitted[-1] == TaskPatch()  # out of the cluster: asked again
    handle_drop(drop, recipes=load_recipes(), submit=submit, ask=ask("x"), state=state, machines=None)
    assert asked == ["laptop", None] and submitted[-1] == TaskPatch()  # the new answer is remembered


@pytest.fixture(params=[True], ids=["in a cluster"])
def tray(
    request: pytest.FixtureRequest,
    qtbot: QtBot,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    japan_time: None,
) -> Iterator[TrayApp]:
    """The real tray app and owner (demo GPUs), joined to a cluster as desk (the test plays the bridge),
    or (param False) in none."""
    if request.param:
        hide_ray(tmp_path, monkeypatch)
        join(app_paths())
    app = TrayApp(build_parser().parse_args(["--demo"]), tray_available=True)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        yield app
    finally:
        app.shutdown()
        app.panel.hide()


def drop_answering(app: TrayApp, script: Path, answer: Callable[[DropConfirmDialog], None]) -> DropOutcome:
    """``app.drop_files`` with its modal dialog answered as a person would, by ``answer``."""

    def exec_(dialog: DropConfirmDialog) -> int:
        answer(dialog)
        dialog.accept()
        return dialog.result()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DropConfirmDialog, "exec", exec_)
        return app.drop_files([str(script)])


def test_a_drop_for_any_machine_becomes_a_task_for_any_machine(
    qtbot: QtBot, tray: TrayApp, tmp_path: Path
) -> None:
    app = tray
    report_as_the_bridge(app.owner, app_paths())
    assert app._run_on_machines() == ["laptop"]  # nas is offline: nothing can be sent there
    seen: list[list[str]] = []

    def choose_any(dialog: DropConfirmDialog) -> None:
        assert dialog.machine_box is not None
        seen.append([dialog.machine_box.itemText(i) for i in range(dialog.machine_box.count())])
        dialog.machine_box.setCurrentIndex(dialog.machine_box.findData("any"))

    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    outcome = drop_answering(app, script, choose_any)
    assert seen == [["this machine", "any machine", "laptop"]]
    assert outcome.messages == [] and len(outcome.task_ids) == 1
    assert app.owner is not None
    task = app.owner.queue.get(outcome.task_ids[0])
    assert task.spec.machine == "any" and task.name == "train.py"
    # and the panel shows the machines the bridge reported
    app.show_panel(QRect(1200, 770, 24, 24))
    qtbot.waitUntil(lambda: list(app.panel.cluster_section.groups) == ["laptop", "nas"], timeout=5000)
    assert app.panel.local_machine.name_label.text() == "desk"


@pytest.mark.parametrize("tray", [False], ids=["alone"], indirect=True)
def test_alone_the_tray_offers_no_run_on_and_shows_no_machines(
    qtbot: QtBot, tray: TrayApp, tmp_path: Path
) -> None:
    app = tray
    boxes: list[object] = []
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    outcome = drop_answering(app, script, lambda dialog: boxes.append(dialog.machine_box))
    assert boxes == [None] and app._run_on_machines() is None
    assert app.owner is not None and app.owner.queue.get(outcome.task_ids[0]).spec.machine is None
    app.show_panel(QRect(1200, 770, 24, 24))
    assert app.panel.local_machine.isHidden() and app.panel.cluster_section.isHidden()
