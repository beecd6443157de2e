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
                and node.func.id in ("tr", "tr_noop", "trn")
            ):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value not in out:
                    out.append(arg.value)
    return out


def ts_messages(ts: Path = TS) -> dict[str, str]:
    """Source → translation; a plural message's forms joined by newlines."""
    root = ET.parse(ts).getroot()
    out = {}
    for m in root.iter("message"):
        forms = [f.text or "" for f in m.iter("numerusform")]
        out[m.findtext("source") or ""] = "\n".join(forms) if forms else (m.findtext("translation") or "")
    return out


def numerus_sources(ts: Path = TS) -> list[str]:
    return [m.findtext("source") or "" for m in ET.parse(ts).getroot().iter("message") if m.get("numerus")]


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
    plural = set(numerus_sources())
    for source, translation in ts_messages().items():
        if source in plural:  # Japanese has one form: the same sentence for 1 and 2
            for n in (1, 2):
                assert translator.translate(CONTEXT, source, None, n) == translation  # %n: filled by Qt
        else:
            assert translator.translate(CONTEXT, source) == translation, source


def test_plural_sentences_have_english_and_japanese_forms(qapp: object) -> None:
    """Issue 33 item 14: "1 file(s) will become 1 job(s)" is Qt's plural forms now, in both languages:
    every ``trn`` sentence is a numerus message in gputray_ja.ts and gputray_en.ts, and the shipped
    gputray_en.qm says "1 file … 1 job", "2 files … 2 jobs"."""
    en_ts = resource_path("translations/gputray_en.ts")
    plural = [s for s in marked_strings() if "%n" in s]
    assert len(plural) >= 4
    assert set(plural) <= set(numerus_sources()) and set(plural) <= set(numerus_sources(en_ts))
    english = QTranslator()
    assert english.load(str(resource_path("translations/gputray_en.qm")))
    for source in plural:
        one, two = ts_messages(en_ts)[source].split("\n")
        assert english.translate(CONTEXT, source, None, 1) == one
        assert english.translate(CONTEXT, source, None, 2) == two
        assert "(s)" not in one + two


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
