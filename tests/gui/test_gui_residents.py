"""The tray side of making room (issue 27), offscreen, in English and Japanese: each resident a line on
its GPU's card with its figures whole (the app's own layout audit), a GPU a game took said on its card
and in the tray icon, the row menu's two answers to freeing an idle resident, and the dashboard's
Residents tab. The owner's ``room`` reply is a typed record (``replies.RoomReply``), built here as the
owner builds it; the end-to-end tests with a real owner and real resident processes are
``test_room_answers_without_a_desktop_daemon`` below and ``tests/e2e/test_tray_residents.py``."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gui_snapshots import KEY_780M, KEY_5060, snapshot
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QMenu
from pytestqt.qtbot import QtBot

from gputray.gui.i18n import install_language
from gputray.gui.layout_audit import audit
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.gui.residents_table import ResidentsTable
from gputray.gui.room_prompts import FREE_RESIDENT
from gputray.gui.tray_icon import picture_for, render_picture, summary_line
from gputray.gui.widgets import ElidedLabel
from gputray.monitor.residents import ResidentView
from gputray.scheduler.replies import RoomQuestion, RoomReply, TaskView

GIB = 1024**3
NOW = 10_000.0
ANCHOR = QRect(1200, 770, 24, 24)  # a bottom-right tray icon
COMFY = ResidentView(
    name="ComfyUI", pid=4100, port=8188, device=KEY_5060, held_bytes=int(9.8 * GIB), models=(),
    busy=False, idle_since_s=NOW - 14 * 60, answered=True, can_free=True,
)  # fmt: skip
OLLAMA = ResidentView(
    name="Ollama", pid=4200, port=11434, device=KEY_5060, held_bytes=int(6.0 * GIB), models=("qwen3:14b",),
    busy=True, idle_since_s=None, answered=True, can_free=True,
)  # fmt: skip
MINE = ResidentView(
    name="my-very-own-inference-server-with-a-long-name", pid=4300, port=9000, device=KEY_780M,
    held_bytes=int(2.5 * GIB), models=(), busy=False, idle_since_s=NOW - 3 * 3600, answered=True,
    can_free=True,
)  # fmt: skip
FIGURES = {
    "en": ["holds 9.8 GiB · idle 14 min", "holds 6.0 GiB · serving", "holds 2.5 GiB · idle 3 h 00 min"],
    "ja": [
        "9.8 GiB を確保 · アイドル 14 分",
        "6.0 GiB を確保 · 応答中",
        "2.5 GiB を確保 · アイドル 3 時間 00 分",
    ],
}
TAKEN = {
    "en": "taken by cs2: gputray's jobs here are paused",
    "ja": "cs2 が使用中: gputray のジョブはここで一時停止中",
}


@pytest.fixture(params=["en", "ja"])
def language(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    assert install_language(request.param)
    yield request.param
    install_language("en")


def room(
    *residents: ResidentView, taken: dict[str, str] | None = None, questions: tuple[RoomQuestion, ...] = ()
) -> RoomReply:
    return RoomReply(residents=residents, taken=taken or {}, questions=questions, now_s=NOW)


def holds_on_5060(app: object, gib: float) -> bool:
    """The resident's memory is on the simulated 5060 Ti and the tray has heard of it (before a job that
    needs it is submitted: else the job starts at once and nothing is asked)."""
    latest = getattr(app, "latest", None)
    reading = latest.reading(KEY_5060) if latest is not None else None
    room_now = getattr(app, "room", None)
    used = (reading.sample.vram_used_bytes or 0) if reading is not None else 0
    return used >= gib * GIB and room_now is not None and any(r.held_bytes for r in room_now.residents)


def visible_texts(panel: Panel) -> list[str]:
    from PySide6.QtWidgets import QLabel

    return [
        w.shown_text() if isinstance(w, ElidedLabel) else w.text()
        for w in panel.findChildren(QLabel)
        if w.isVisibleTo(panel)
    ]


def test_each_resident_is_a_line_on_its_card_its_figures_whole_and_a_taken_gpu_says_so(
    qtbot: QtBot, language: str
) -> None:
    panel = Panel(QueueModel(), demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(snapshot())
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    before = panel.height()

    panel.set_room(room(COMFY, OLLAMA, MINE, taken={KEY_5060: "cs2"}))
    panel.update_snapshot(snapshot(t=1001.0))  # the cards show it at the next snapshot
    QApplication.processEvents()
    assert panel.height() > before, "the panel grows by the residents' lines while shown"
    rows = panel.cards[KEY_5060].resident_rows.rows
    assert [r.name_label.text() for r in rows] == ["ComfyUI", "Ollama"]  # largest first
    texts = visible_texts(panel)
    missing = [f for f in FIGURES[language] if f not in texts]
    assert missing == [], f"{missing} not shown whole in {texts}"
    assert TAKEN[language] in texts, texts
    assert panel.cards[KEY_5060].taken_by() == "cs2" and panel.cards[KEY_780M].taken_by() is None
    idle_here = {  # not "not in use by other programs" above a resident's line
        "en": "other programs hold memory here, computing little",
        "ja": "他のプログラムがメモリを確保中（計算はわずか）",
    }
    assert panel.cards[KEY_780M].busy_label.text() == idle_here[language]
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]
    assert report.primary >= 6 + 3  # every card's figures, and each resident's

    panel.set_room(room())  # they exit: the lines go, the panel is as before
    panel.update_snapshot(snapshot(t=1002.0))
    QApplication.processEvents()
    assert panel.height() == before
    assert not panel.cards[KEY_5060].resident_rows.isVisibleTo(panel)
    assert TAKEN[language] not in visible_texts(panel)
    unused = {"en": "not in use by other programs", "ja": "他のプログラムは使用していません"}
    assert panel.cards[KEY_780M].busy_label.text() == unused[language]


def test_the_tray_icon_and_its_tooltip_show_a_gpu_a_game_took(qapp: QApplication) -> None:
    snap = snapshot()
    free, taken = (
        picture_for(snap, waiting=0, demo=False),
        picture_for(snap, waiting=0, demo=False, taken={KEY_5060: "cs2"}),
    )
    assert [b.taken for b in taken.bars] == [True, False] and not any(b.taken for b in free.bars)
    white = QColor("#ffffff").rgba()

    def whites(image: object) -> int:
        return sum(image.pixel(x, y) == white for x in range(22) for y in range(22))  # type: ignore[attr-defined]

    assert whites(render_picture(taken, 22)) > whites(render_picture(free, 22)) + 4  # the pause mark
    line = summary_line(snap, waiting=0, running=1, demo=False, taken={KEY_5060: "cs2"})
    assert "RTX 5060 Ti taken by cs2" in line, line
    assert "taken" not in summary_line(snap, waiting=0, running=1, demo=False)
    paused = summary_line(snap, waiting=0, running=0, paused=1, demo=False, taken={KEY_5060: "cs2"})
    assert paused.endswith(" · 0 running, 1 paused, 0 waiting"), paused  # its job paused for the game


def test_the_row_menu_offers_to_free_the_resident_for_its_waiting_task(qtbot: QtBot, language: str) -> None:
    model = QueueModel()
    task = TaskView(id=7, name="train.py", state="waiting", device=None, submitted_at=NOW - 60)
    model.apply((task,))
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    question = RoomQuestion(task_id=7, task_name="train.py", device=KEY_5060, resident=COMFY)
    menu = panel.row_menu(0)
    assert not any("ComfyUI" in a.text() for a in menu.actions())  # no question: no entry
    panel.set_room(room(COMFY, questions=(question,)))
    menu = panel.row_menu(0)
    assert isinstance(menu, QMenu)
    labels = [a.text() for a in menu.actions()]
    free = {
        "en": "Free ComfyUI's 9.8 GiB and run train.py",
        "ja": "ComfyUI の 9.8 GiB を解放して train.py を実行",
    }
    keep = {"en": "Keep waiting", "ja": "このまま待つ"}
    assert labels[-2:] == [free[language], keep[language]], labels
    with qtbot.waitSignal(panel.room_answered) as answered:
        next(a for a in menu.actions() if a.text() == free[language]).trigger()
    assert answered.args == [FREE_RESIDENT, question]


def test_the_dashboard_lists_the_residents_and_the_taken_gpus(qtbot: QtBot, language: str) -> None:
    table = ResidentsTable()
    qtbot.addWidget(table)
    nowhere = dataclasses.replace(COMFY, pid=4400, port=8189, device=None, held_bytes=None)  # on no GPU
    table.show_room(room(nowhere, COMFY, OLLAMA, taken={KEY_5060: "cs2"}), {KEY_5060: "GeForce RTX 5060 Ti"})
    rows = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    idle = {"en": "idle 14 min", "ja": "アイドル 14 分"}[language]
    serving = {"en": "serving", "ja": "応答中"}[language]
    assert rows[0] == ["ComfyUI", "GeForce RTX 5060 Ti", "9.8 GiB", idle, "—", "8188"]
    assert rows[1] == ["Ollama", "GeForce RTX 5060 Ti", "6.0 GiB", serving, "qwen3:14b", "11434"]
    assert rows[2] == ["ComfyUI", "—", "—", idle, "—", "8189"]  # after those on a GPU
    assert rows[3][0] == "cs2" and rows[3][3] == {"en": "taken by cs2", "ja": "cs2 が使用中"}[language]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil ports, symlinked names")
def test_room_answers_without_a_desktop_daemon(
    qtbot: QtBot, tmp_path: Path, gputray_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No notification service (no session bus): the question comes as the tray's balloon; a click on it
    opens the panel at the task with its row menu, whose "Free …" makes the real owner ask the real
    resident (an Ollama stub) through its API; the memory comes back and the job runs."""
    from resident_stubs import resident

    from gputray.gui.app import build_parser
    from gputray.gui.tray_app import TrayApp
    from gputray.scheduler import protocol as rq
    from gputray.scheduler.tasks.records import TaskPatch

    holds = tmp_path / "holds"
    monkeypatch.setenv("GPUTRAY_SIM_HOLDS", str(holds))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")
    config = gputray_home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[resident]]\nname = "Ollama"\nidle_after = "0s"\n')  # free_when_idle = "ask"
    quiet = tmp_path / "no-load.toml"
    quiet.write_text("")
    with resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama:
        app = TrayApp(build_parser().parse_args(["--demo-scenario", str(quiet)]), tray_available=False)
        app.start()
        try:
            qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
            qtbot.waitUntil(
                lambda: app.room is not None and any(r.pid == ollama.proc.pid for r in app.room.residents),
                timeout=30_000,
            )
            qtbot.waitUntil(lambda: holds_on_5060(app, 12), timeout=30_000)
            done = app.request(
                rq.Run(
                    argv=[sys.executable, "-c", "pass"], name="train.py",
                    overrides=TaskPatch(device_prefs=("5060ti",), vram_bytes=8 * GIB),
                )
            )  # fmt: skip
            assert done is not None
            task_id = done.tasks[0].id
            qtbot.waitUntil(lambda: any(n.kind == "resident_ask" for n in app.notifier.shown), timeout=30_000)
            notice = next(n for n in app.notifier.shown if n.kind == "resident_ask")
            assert notice.title == "train.py waits for GeForce RTX 5060 Ti" and notice.task_id == task_id
            assert ollama.paths_called("POST") == []
            app.tray.messageClicked.emit()  # the balloon (a click not on the icon)
            menu = QApplication.activePopupWidget()
            assert isinstance(menu, QMenu), "the task's row menu is open"
            assert app.panel.room_bar.isVisible()  # and the bar above the list asks too
            assert app.panel.room_bar.free_button.text() == "Free Ollama's 12.0 GiB and run train.py"
            (free,) = [a for a in menu.actions() if a.text() == "Free Ollama's 12.0 GiB and run train.py"]
            free.trigger()
            menu.close()
            qtbot.waitUntil(lambda: "/api/generate" in ollama.paths_called("POST"), timeout=20_000)

            def state() -> str:
                got = app.request(rq.Get(id=task_id))
                return got.task.state if got is not None else ""

            qtbot.waitUntil(lambda: state() == "succeeded", timeout=30_000)
            got = app.request(rq.Get(id=task_id))
            assert got is not None and got.task.reason is not None
            from gputray.scheduler.reasons.render import render

            assert "held by Ollama (idle " in render(got.task.reason), render(got.task.reason)
        finally:
            app.shutdown()
            app.panel.hide()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil ports, symlinked names")
def test_keep_waiting_is_not_asked_again_and_a_question_goes_when_its_task_does(
    qtbot: QtBot, tmp_path: Path, gputray_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the stand-in notification daemon on a private bus: "Keep waiting" asks the resident nothing
    and the task is not asked about again — the owner keeps the answer with the task
    (``kept_residents``), so a restarted tray (and its owner) does not ask either; a question left
    unanswered is taken off the desktop when its task is cancelled."""
    import shutil

    from resident_stubs import resident

    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon")
    from test_gui_offer_notifications import NotificationDaemon, start_daemon

    from gputray.gui.app import build_parser
    from gputray.gui.tray_app import TrayApp
    from gputray.scheduler import protocol as rq
    from gputray.scheduler.tasks.records import TaskPatch

    bus = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        capture_output=True, text=True, check=True, timeout=20,
    )  # fmt: skip
    address, bus_pid = bus.stdout.split()[:2]
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    holds = tmp_path / "holds"
    monkeypatch.setenv("GPUTRAY_SIM_HOLDS", str(holds))
    config = gputray_home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[resident]]\nname = "Ollama"\nidle_after = "0s"\n')
    quiet = tmp_path / "no-load.toml"
    quiet.write_text("")
    proc = start_daemon("actions,body")
    try:
        daemon = NotificationDaemon(proc)
        with resident(tmp_path, "ollama", holds=holds, hold_gib=12) as ollama:

            def started() -> TrayApp:
                app = TrayApp(
                    build_parser().parse_args(["--demo-scenario", str(quiet)]), tray_available=False
                )
                app.start()
                qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
                qtbot.waitUntil(lambda: holds_on_5060(app, 12), timeout=30_000)
                return app

            app = started()
            try:

                def waiting(name: str) -> int:
                    overrides = TaskPatch(device_prefs=("5060ti",), vram_bytes=8 * GIB)
                    done = app.request(
                        rq.Run(argv=[sys.executable, "-c", "pass"], name=name, overrides=overrides)
                    )
                    assert done is not None
                    return done.tasks[0].id

                first = waiting("train.py")
                asked = daemon.next_call(qtbot)
                assert asked["summary"] == "train.py waits for GeForce RTX 5060 Ti", asked
                daemon.press(asked["id"], "keep-waiting")
                qtbot.waitUntil(lambda: (first, ollama.proc.pid) in app.room_prompts.settled, timeout=10_000)
                got = app.request(rq.Get(id=first))
                assert got is not None and got.spec is not None and got.spec.kept_residents == ("Ollama",)
                second = waiting("finetune.py")  # the next task is asked; the first is not again
                asked = daemon.next_call(qtbot)
                assert asked["summary"] == "finetune.py waits for GeForce RTX 5060 Ti", asked
                app.cancel([second])
                assert daemon.next_call(qtbot, "closed") == asked["id"]
                assert daemon.calls_so_far() == []
                app.shutdown()
                app.panel.hide()
                app = started()  # a new tray and owner, the same queue: "Keep waiting" was the task's
                third = waiting("eval.py")  # asked, after the first (higher in the queue) had its chance
                asked = daemon.next_call(qtbot)
                assert asked["summary"] == "eval.py waits for GeForce RTX 5060 Ti", asked
                assert app.room is not None and [q.task_id for q in app.room.questions] == [third]
                assert ollama.paths_called("POST") == []  # nothing was asked of the resident
                from gputray.scheduler.reasons.render import render

                def reason(task_id: int) -> str:
                    got = app.request(rq.Get(id=task_id))
                    return render(got.task.reason) if got is not None and got.task.reason else ""

                qtbot.waitUntil(lambda: "you chose to keep waiting rather than free it" in reason(first))
            finally:
                app.shutdown()
                app.panel.hide()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.kill(int(bus_pid), signal.SIGTERM)


def test_the_room_bar_keeps_the_question_one_click_away_until_it_is_answered(
    qtbot: QtBot, language: str
) -> None:
    """Where the desktop shows no buttons (Windows, no daemon) the balloon goes away: the bar above the
    queue keeps the first standing question with both answers until one is given."""
    from PySide6.QtCore import Qt

    model = QueueModel()
    model.apply((TaskView(id=7, name="train.py", state="waiting", submitted_at=NOW - 60),))
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(snapshot())
    panel.show_at(ANCHOR)
    assert not panel.room_bar.isVisible()
    question = RoomQuestion(task_id=7, task_name="train.py", device=KEY_5060, resident=COMFY)
    panel.set_room(room(COMFY, questions=(question,)))
    qtbot.waitUntil(panel.room_bar.isVisible, timeout=5000)
    title = {
        "en": "train.py waits for GeForce RTX 5060 Ti",
        "ja": "train.py は GeForce RTX 5060 Ti を待っています",
    }
    assert panel.room_bar.text.text() == title[language]
    figures = {"en": "holds 9.8 GiB · idle 14 min", "ja": "9.8 GiB を確保 · アイドル 14 分"}
    shown = panel.room_bar.resident_row  # the resident on a line of its own, its figures never elided
    assert (shown.name_label.text(), shown.figures_label.text()) == ("ComfyUI", figures[language])
    free = {
        "en": "Free ComfyUI's 9.8 GiB and run train.py",
        "ja": "ComfyUI の 9.8 GiB を解放して train.py を実行",
    }
    assert panel.room_bar.free_button.text() == free[language]
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]
    assert report.primary >= 6 + 1 + 1  # the cards', the card's resident's, and the bar's
    with qtbot.waitSignal(panel.room_answered) as answered:
        qtbot.mouseClick(panel.room_bar.free_button, Qt.MouseButton.LeftButton)
    assert answered.args == [FREE_RESIDENT, question]
    assert not panel.room_bar.isVisible()
    panel.set_room(room(COMFY, questions=(question,)))  # the owner still lists it a moment: not again
    assert not panel.room_bar.isVisible()


def test_a_long_resident_name_does_not_widen_the_panel_with_the_room_bar(qtbot: QtBot, language: str) -> None:
    model = QueueModel()
    model.apply((TaskView(id=7, name="train.py", state="waiting", submitted_at=NOW - 60),))
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(snapshot())
    panel.show_at(ANCHOR)
    QApplication.processEvents()
    width = panel.width()
    mine = dataclasses.replace(MINE, device=KEY_5060)  # "my-very-own-inference-server-with-a-long-name"
    panel.set_room(
        room(mine, questions=(RoomQuestion(task_id=7, task_name="train.py", device=KEY_5060, resident=mine),))
    )
    panel.update_snapshot(snapshot(t=1001.0))
    qtbot.waitUntil(panel.room_bar.isVisible, timeout=5000)
    QApplication.processEvents()
    assert panel.width() == width  # it grew by 150 px: the Free button held the whole name
    assert "my-very-own-inf…" in panel.room_bar.free_button.text()
    assert mine.name in panel.room_bar.free_button.toolTip()
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]


def test_the_room_bar_shows_every_standing_question_one_click_apart(qtbot: QtBot, language: str) -> None:
    """Several questions stand (three waiting tasks, two idle residents): the bar shows one with "1 of 3"
    and arrows to the others, every figure whole; answering one shows the next still standing."""
    from PySide6.QtCore import Qt

    model = QueueModel()
    names = {7: "train.py", 8: "finetune.py", 9: "eval.py"}
    model.apply(
        tuple(TaskView(id=i, name=n, state="waiting", submitted_at=NOW - 60) for i, n in names.items())
    )
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    panel.update_snapshot(snapshot())
    panel.show_at(ANCHOR)
    idle_ollama = dataclasses.replace(OLLAMA, busy=False, idle_since_s=NOW - 5 * 60)
    questions = (
        RoomQuestion(task_id=7, task_name="train.py", device=KEY_5060, resident=COMFY),
        RoomQuestion(task_id=8, task_name="finetune.py", device=KEY_5060, resident=idle_ollama),
        RoomQuestion(task_id=9, task_name="eval.py", device=KEY_5060, resident=COMFY),
    )
    panel.set_room(room(COMFY, idle_ollama, questions=questions))
    bar = panel.room_bar
    qtbot.waitUntil(bar.isVisible, timeout=5000)
    of = {"en": "{i} of {n}", "ja": "{n} 件中 {i} 件目"}[language]
    free = {"en": "Free {r}'s {gib} GiB and run {t}", "ja": "{r} の {gib} GiB を解放して {t} を実行"}[
        language
    ]

    def shown() -> tuple[str, str, str]:
        return bar.position.text(), bar.free_button.text(), bar.resident_row.name_label.text()

    assert shown() == (of.format(i=1, n=3), free.format(r="ComfyUI", gib="9.8", t="train.py"), "ComfyUI")
    assert bar.previous_button.isVisible() and bar.next_button.isVisible()
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]
    assert report.primary >= 6 + 1 + 1 + 1  # the cards', the card's resident's, the bar's and "1 of 3"
    qtbot.mouseClick(bar.next_button, Qt.MouseButton.LeftButton)
    assert shown() == (of.format(i=2, n=3), free.format(r="Ollama", gib="6.0", t="finetune.py"), "Ollama")
    qtbot.mouseClick(bar.previous_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(bar.previous_button, Qt.MouseButton.LeftButton)  # round the start: the last
    assert shown() == (of.format(i=3, n=3), free.format(r="ComfyUI", gib="9.8", t="eval.py"), "ComfyUI")
    with qtbot.waitSignal(panel.room_answered) as answered:
        qtbot.mouseClick(bar.keep_button, Qt.MouseButton.LeftButton)
    assert answered.args[1] == questions[2]
    assert shown()[0] == of.format(i=2, n=2)  # the one before it, now last
    assert bar.question == questions[1]
    panel.set_room(room(COMFY, idle_ollama, questions=questions))  # the owner lists it a moment longer
    assert bar.question == questions[1] and shown()[0] == of.format(i=2, n=2)
    panel.set_room(room(COMFY, idle_ollama, questions=questions[:1]))  # one left: no arrows, no "1 of 1"
    assert bar.question == questions[0]
    assert not bar.position.isVisible() and not bar.next_button.isVisible()
    report = audit(panel)
    assert report.problems == [], [str(p) for p in report.problems]
