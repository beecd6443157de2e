"""Japanese UI: every string the GUI marks is translated, the shipped .qm matches the .ts, and it shows."""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTranslator
from pytestqt.qtbot import QtBot

from gputray.gui.i18n import CONTEXT, install_language, resolve_language
from gputray.gui.menu import TrayMenu
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.resources import resource_path

GUI_DIR = Path(__file__).resolve().parents[2] / "gui"
TS = resource_path("translations/gputray_ja.ts")
QM = resource_path("translations/gputray_ja.qm")


def marked_strings() -> list[str]:
    out: list[str] = []
    for path in sorted(GUI_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("tr", "tr_noop")
            ):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value not in out:
                    out.append(arg.value)
    return out


def ts_messages() -> dict[str, str]:
    root = ET.parse(TS).getroot()
    return {m.findtext("source") or "": m.findtext("translation") or "" for m in root.iter("message")}


@pytest.fixture
def japanese(qapp: object) -> Iterator[None]:
    assert install_language("ja")
    yield
    install_language("en")


def test_every_marked_string_has_a_japanese_translation() -> None:
    messages = ts_messages()
    strings = marked_strings()
    assert len(strings) > 100
    missing = [s for s in strings if not messages.get(s)]
    assert missing == [], f"add these to {TS.name} and run pyside6-lrelease: {missing}"
    for s in strings:
        assert set(re.findall(r"{\w+}", s)) == set(re.findall(r"{\w+}", messages[s])), s


def test_compiled_qm_is_up_to_date_with_the_ts(qapp: object) -> None:
    translator = QTranslator()
    assert translator.load(str(QM))
    for source, translation in ts_messages().items():
        assert translator.translate(CONTEXT, source) == translation, source


def test_the_panel_and_menu_speak_japanese(qtbot: QtBot, japanese: None) -> None:
    panel = Panel(QueueModel(), demo=True)
    qtbot.addWidget(panel)
    assert panel.windowTitle() == "gputray — デモ"
    assert panel.pause_all_button.text() == "キューを一時停止"
    assert panel.drop_zone.text() == "ここにファイルをドロップしてキューに追加"
    assert panel.model.headerData(1, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) == "状態"
    menu = TrayMenu()
    assert [a.text() for a in menu.actions() if a.text()][-1] == "終了"


def test_english_back_and_locale_rules(qtbot: QtBot) -> None:
    install_language("en")
    panel = Panel(QueueModel())
    qtbot.addWidget(panel)
    assert panel.pause_all_button.text() == "Pause queue"
    assert resolve_language("auto", "ja_JP") == "ja"
    assert resolve_language(None, "de_DE") == "en"
    assert resolve_language("ja", "en_US") == "ja"
