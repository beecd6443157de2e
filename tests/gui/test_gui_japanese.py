"""Japanese, complete: every window of a running app, walked widget by widget, shows no English
outside a short list of proper nouns and units; switching back to English changes every open window
at once and keeps the demo banner.

The app is the real one (demo GPUs with an external llama-server on the 5060 Ti, the real queue)
with real tasks whose reasons come from the real scheduler: one waiting for the busy GPU, one that
failed with an exit status, one that no device can take, one that succeeded. It is in a cluster with
two other machines (one offline), as its bridge reports them (tests/gui/cluster_views.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import shiboken6
from cluster_views import DATA_NAMES, hide_ray, join, report_as_the_bridge
from pytestqt.qtbot import QtBot
from ui_walk import JAPANESE, english_words, menu_texts, widget_texts

from gputray.gui import layout_audit
from gputray.gui.app import build_parser
from gputray.gui.drops import DropConfirmDialog, plan_drop, tool_check
from gputray.gui.i18n import install_language
from gputray.gui.messages import note
from gputray.gui.panel import process_menu
from gputray.gui.process_actions import confirmation_box
from gputray.gui.settings_dialog import SettingsDialog
from gputray.gui.tray_app import NO_GPU_NOTE, TrayApp
from gputray.monitor.records import ProcessUse
from gputray.resources import resource_path
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import app_paths
from gputray.scheduler.tasks.recipes import load_recipes
from gputray.scheduler.tasks.records import TaskPatch

SCENARIO = resource_path("scenarios/llm_busy.toml")
NAMES = ("失敗するジョブ", "待つジョブ", "大きすぎるジョブ", "終わるジョブ")


@pytest.fixture
def app(
    qtbot: QtBot, tmp_path: Path, gputray_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TrayApp]:
    # a recipe whose program is missing (with where to get it), for the drop dialog
    config = gputray_home / "config"
    config.mkdir(parents=True)
    (config / "recipes.toml").write_text(
        '[[recipe]]\nname = "upscale-image"\npatterns = ["*.png"]\nkind = "vulkan"\n'
        'argv = ["gputray-test-no-such-tool", "{file}"]\n'
        'install_hint = "https://example.org/tool (put it on PATH)"\n'
        'install_hint_ja = "https://example.org/tool(PATH の通った場所に置いてください)"\n'
    )
    hide_ray(tmp_path, monkeypatch)  # the test plays the bridge (report_as_the_bridge)
    join(app_paths())
    args = build_parser().parse_args(["--demo-scenario", str(SCENARIO)])
    tray_app = TrayApp(args, tray_available=True)
    tray_app.start()
    try:
        qtbot.waitUntil(lambda: tray_app.owner is not None and tray_app.latest is not None, timeout=30_000)
        yield tray_app
    finally:
        install_language("en")
        tray_app.shutdown()
        tray_app.panel.hide()
        if tray_app.dashboard is not None:
            tray_app.dashboard.hide()


def queue_real_tasks(app: TrayApp, qtbot: QtBot) -> None:
    py = sys.executable
    runs = [
        (NAMES[0], [py, "-c", "raise SystemExit(3)"], TaskPatch(device_prefs=("cpu",))),
        (NAMES[1], [py, "-c", "pass"], TaskPatch(device_prefs=("5060ti",), on_busy="wait")),
        (NAMES[2], [py, "-c", "raise SystemExit(7)"], TaskPatch(device_prefs=("780m",))),
        (NAMES[3], [py, "-c", "pass"], TaskPatch(device_prefs=("cpu",))),
    ]
    for name, argv, overrides in runs:
        app.request(rq.Run(argv=argv, name=name, overrides=overrides))
    app.reload_queue()

    def settled() -> bool:
        app.reload_queue()
        states = {t.name: t.state for t in app.model.tasks()}
        return states == {NAMES[0]: "failed", NAMES[1]: "waiting", NAMES[2]: "failed", NAMES[3]: "succeeded"}

    qtbot.waitUntil(settled, timeout=30_000)
    qtbot.waitUntil(lambda: app.latest is not None and bool(app.latest.processes), timeout=10_000)


def data_strings(app: TrayApp, tmp_path: Path) -> list[str]:
    """What is data, not the app's words: names of tasks, processes and devices, paths."""
    data = [*NAMES, sys.executable, str(tmp_path), str(app_paths().config_file), "python"]
    data += [p.name for p in (app.latest.processes if app.latest else ())]
    data += [str(t.log_path) for t in app.model.tasks() if t.log_path]
    data += ["photo (1).png", "notes.txt", "a folder", "gputray-test-no-such-tool", "日本語"]
    data += ["[devices.<name>] slots = N"]  # config syntax, in the jobs label's tooltip
    data += DATA_NAMES  # the cluster's machines and their GPUs
    # GPU servers running on this machine (an Ollama of the user's, another test's stub): their names
    # and models are data in the dashboard's Residents tab
    data += [s for r in (app.room.residents if app.room else ()) for s in (r.name, *r.models)]
    return data


def all_window_texts(app: TrayApp, qtbot: QtBot, tmp_path: Path) -> dict[str, list[str]]:
    """Open every window and dialog the app has and collect what each shows."""
    from PySide6.QtCore import QRect

    texts: dict[str, list[str]] = {}
    report_as_the_bridge(app.owner, app_paths())  # laptop online with two GPUs, nas offline
    app.show_panel(QRect(1200, 770, 24, 24))
    qtbot.waitUntil(app.panel.isVisible)
    texts["panel"] = widget_texts(app.panel)
    texts["tray tooltip"] = [app.icon_ctl.tooltip]
    texts["tray menu"] = menu_texts(app.menu)
    rows = {str(t.name): i for i, t in enumerate(app.model.tasks())}
    card = next(iter(app.panel.cards.values()))
    for name, menu in (
        ("queue row menu (waiting)", app.panel.row_menu(rows[NAMES[1]])),
        ("queue row menu (failed)", app.panel.row_menu(rows[NAMES[0]])),
        ("process menu", process_menu(app.panel, card.processes(), lambda p: None)),
    ):
        texts[name] = menu_texts(menu)
        shiboken6.delete(menu)  # as the app deletes each menu once it closes
    app.open_dashboard()
    dash = app.dashboard
    assert dash is not None
    for tab in range(dash.tabs.count()):
        dash.tabs.setCurrentIndex(tab)
        dash.refresh()
        texts[f"dashboard tab {tab}"] = widget_texts(dash)
    texts["dashboard plots"] = [
        str(plot.getAxis(side).labelText) for plot in dash.plots.values() for side in ("left", "bottom")
    ]
    waiting_row = next(i for i in range(dash.task_list.count()) if NAMES[1] in dash.task_list.item(i).text())
    dash.task_list.setCurrentRow(waiting_row)
    texts["dashboard: a waiting task's log"] = [dash.log_view.toPlainText()]
    settings = SettingsDialog(None, app.config)
    qtbot.addWidget(settings)
    texts["settings"] = widget_texts(settings)
    from gputray.gui.file_viewer import FileViewer
    from gputray.gui.i18n import tr

    viewer = FileViewer(app_paths().config_file, tr("Your recipes file"))  # (the file's text is data)
    viewer.text.setPlainText("")
    qtbot.addWidget(viewer)
    texts["file viewer"] = widget_texts(viewer)
    photo = tmp_path / "photo (1).png"
    photo.write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "a folder").mkdir(exist_ok=True)
    recipes = load_recipes()
    items = [str(photo), str(tmp_path / "notes.txt"), str(tmp_path / "a folder")]
    machines = app._run_on_machines()  # in a cluster: "Run on" this machine, any machine, laptop
    dialog = DropConfirmDialog(plan_drop(items, recipes), {}, check=tool_check(recipes), machines=machines)
    qtbot.addWidget(dialog)
    texts["drop dialog"] = widget_texts(dialog)
    app.cancel([next(t.id for t in app.model.tasks() if t.name == NAMES[0])])  # nothing to cancel
    texts["warning box"] = widget_texts(app._last_warning)
    mine = ProcessUse(os.getpid() + 0, "python", "cpu", "compute")
    box, _stop = confirmation_box(None, mine)
    qtbot.addWidget(box)
    texts["stop process question"] = widget_texts(box)
    app.set_bubble(True)
    assert app.bubble is not None
    texts["drop bubble"] = [*widget_texts(app.bubble), app.bubble.label_text()]
    texts["notifications"] = [f"{n.title} {n.message}" for n in app.notifier.shown]
    return texts


def test_every_window_in_japanese_and_back(qtbot: QtBot, app: TrayApp, tmp_path: Path) -> None:
    app.notes.append(note(NO_GPU_NOTE))  # the banner a machine without a GPU shows
    app.panel.set_notice(app.notice_text)
    app.set_language("ja")
    queue_real_tasks(app, qtbot)  # after the switch: its notifications are in Japanese too
    texts = all_window_texts(app, qtbot, tmp_path)
    data = data_strings(app, tmp_path)
    english = {
        window: found
        for window, strings in texts.items()
        if (found := sorted({w for s in strings for w in english_words(s, data)}))
    }
    assert english == {}, f"English left in the Japanese UI: {english}"
    # it really was Japanese, and the walk saw the things it should have
    assert app.panel.pause_all_button.text() == "キューを一時停止"
    assert any("を待機中" in t for t in texts["panel"]), "the waiting task's reason, translated"
    assert any("終了コード 3" in t for t in texts["panel"]), "the failed task's reason, translated"
    assert "保存" in texts["settings"] and "キャンセル" in texts["settings"], (
        "Qt's own buttons, from qtbase_ja"
    )
    assert any("入手先" in t for t in texts["drop dialog"]), "where to get the missing program"
    assert any("デモ" in t for t in texts["panel"]) and "GPU が見つからない" in app.panel.notice_text()
    assert any("からオフライン" in t for t in texts["panel"]), "nas, offline: the cluster was walked"
    assert "どのマシンでも" in texts["drop dialog"]
    assert sum(len(v) for v in texts.values()) > 300
    # nothing is cut off in Japanese either
    for window in (app.panel, app.dashboard):
        report = layout_audit.audit(window)
        assert report.problems == [], [str(p) for p in report.problems]

    # back to English: the same windows (not rebuilt) speak English, and the demo banner stays
    panel, dashboard, menu = app.panel, app.dashboard, app.menu
    app.set_language("en")
    qtbot.waitUntil(lambda: app.panel.pause_all_button.text() == "Pause queue", timeout=5000)
    assert (app.panel, app.dashboard, app.menu) == (panel, dashboard, menu)
    app.notifier.shown.clear()  # shown in Japanese while Japanese was on
    back = all_window_texts(app, qtbot, tmp_path)
    japanese = {
        window: hits
        for window, strings in back.items()
        if (hits := [s for s in strings if JAPANESE.search(_without(s, data))])
    }
    assert japanese == {}, f"Japanese left after switching back: {japanese}"
    assert "No GPU was found on this machine" in app.panel.notice_text()
    assert app.dashboard is not None and app.dashboard.tabs.tabText(0) == "History"


def _without(text: str, data: list[str]) -> str:
    for d in sorted(data, key=len, reverse=True):
        text = text.replace(d, " ")
    return text
