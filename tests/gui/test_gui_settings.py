from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMessageBox
from pytestqt.qtbot import QtBot

from gputray.gui import desktop_integration
from gputray.gui.file_viewer import FileViewer
from gputray.gui.i18n import install_language
from gputray.gui.layout_audit import audit
from gputray.gui.settings_dialog import SettingsDialog, write_user_config
from gputray.scheduler.config import read_config
from gputray.scheduler.paths import app_paths


def test_write_keeps_tables_it_does_not_own(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[env]]\nname = "rocm"\npython = "/v/bin/python"\n\n[monitor]\nhistory_s = 100\n')
    write_user_config({"monitor": {"interval_s": 2.0}, "gui": {"notifications": {"gpu_hot": False}}}, cfg)
    data = tomllib.loads(cfg.read_text())
    assert data["env"] == [{"name": "rocm", "python": "/v/bin/python"}]
    assert data["monitor"] == {"history_s": 100, "interval_s": 2.0}
    assert data["gui"]["notifications"] == {"gpu_hot": False}


def test_dialog_saves_what_the_user_set(qtbot: QtBot, gputray_home: Path) -> None:
    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    assert dialog.interval.value() == 1.0
    assert dialog.recipes_list.count() >= 4  # the shipped recipes are listed
    dialog.interval.setValue(2.5)
    dialog.temp_limit.setValue(80.0)
    dialog.language.setCurrentIndex(dialog.language.findData("ja"))
    dialog.notify_checks["job_started"].setChecked(False)
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog._save()
    assert saved.args[0]["gui"]["language"] == "ja"
    config = read_config()
    assert config.monitor.interval_s == 2.5
    assert config.thresholds.temp_limit_c == 80.0
    assert config.gui.language == "ja"
    assert config.gui.notifications == {"job_started": False}
    assert config.problems == ()
    # only what the user changed is written: no defaults they never set
    assert tomllib.loads(app_paths().config_file.read_text(encoding="utf-8")) == {
        "monitor": {"interval_s": 2.5},
        "thresholds": {"temp_limit_c": 80.0},
        "gui": {"language": "ja", "notifications": {"job_started": False}},
    }
    assert app_paths().config_file.is_file()


def test_saved_settings_read_back_to_the_same_typed_values_keeping_the_rest(
    qtbot: QtBot, gputray_home: Path
) -> None:
    path = app_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    user = (
        '[[env]]\nname = "ロクム"\npython = "/home/ユーザー/venvs/rocm/bin/python"\n\n'
        "[thresholds]\nbusy_util_percent = 55.0\nstale_context_s = 30.0\n\n"
        '[cluster]\naddress = "10.0.0.5:6379"\n'
    )
    path.write_text(user, encoding="utf-8")
    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    assert dialog.busy_util.value() == 55.0
    dialog._save()
    assert path.read_text(encoding="utf-8") == user  # nothing changed: nothing written

    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    dialog.igpu_temp_limit.setValue(75.0)
    dialog.notify_checks["gpu_hot"].setChecked(False)
    dialog._save()
    config = read_config()
    assert config.thresholds.igpu_temp_limit_c == 75.0
    assert config.thresholds.busy_util_percent == 55.0 and config.thresholds.stale_context_s == 30.0
    assert config.gui.notifications == {"gpu_hot": False}
    assert [e.name for e in config.envs] == ["ロクム"] and config.cluster.address == "10.0.0.5:6379"
    again = SettingsDialog(None, config)
    qtbot.addWidget(again)
    assert again.values() == dialog.values()  # the file reads back to what was saved


def test_saving_keeps_the_commented_file_as_a_backup(qtbot: QtBot, gputray_home: Path) -> None:
    """The TOML writer drops comments: like `gputray envs add`, Save keeps the file as it was in
    config.toml.bak instead of losing the user's notes."""
    path = app_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    user = "# 私の設定: 85 °C is too hot for this laptop\n[thresholds]\ntemp_limit_c = 80.0  # summer\n"
    path.write_text(user, encoding="utf-8")
    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    dialog.language.setCurrentIndex(dialog.language.findData("ja"))
    dialog._save()
    assert read_config().gui.language == "ja" and read_config().thresholds.temp_limit_c == 80.0
    assert path.with_name("config.toml.bak").read_text(encoding="utf-8") == user


def test_save_writes_the_shown_value_over_a_bad_one(qtbot: QtBot, gputray_home: Path) -> None:
    """A value out of its range is shown as its default; Save puts that value in the file, so the
    banner's problem goes away without the user having to pick some other number first."""
    path = app_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[thresholds]\ntemp_limit_c = 200\nbusy_util_percent = 55.0\n", encoding="utf-8")
    bad = read_config()
    assert [p.key for p in bad.problems] == ["thresholds.temp_limit_c"]
    dialog = SettingsDialog(None, bad)
    qtbot.addWidget(dialog)
    assert dialog.temp_limit.value() == 85.0
    dialog._save()
    fixed = read_config()
    assert fixed.problems == () and fixed.thresholds.temp_limit_c == 85.0
    assert tomllib.loads(path.read_text(encoding="utf-8"))["thresholds"] == {
        "temp_limit_c": 85.0,
        "busy_util_percent": 55.0,
    }


COMMENTED = (
    "# mine: keep these notes\n[thresholds]\ntemp_limit_c = 80.0  # summer\n\n"
    '[[env]]\nname = "old"\npython = "/opt/old venv/bin/python"\n'
)


def _clicked(qtbot: QtBot, dialog: SettingsDialog, which: QDialogButtonBox.StandardButton) -> None:
    button = dialog.buttons.button(which)
    assert button is not None and button.isVisible()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_cancel_leaves_the_config_file_byte_identical(qtbot: QtBot, gputray_home: Path) -> None:
    """Issue 33 item 2: Add… an environment, Remove another, change values and autostart, then Cancel:
    config.toml is byte for byte what it was, no backup appears and autostart is as it was. The same
    edits with Save are written, and the file as it was is the backup."""
    path = app_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(COMMENTED.encode())
    before = path.read_bytes()

    def edit(dialog: SettingsDialog) -> None:
        dialog.show()
        qtbot.waitExposed(dialog)
        dialog.tabs.setCurrentIndex(1)
        assert dialog.envs_list.item(0).text().startswith("old — ")
        dialog.envs_list.setCurrentRow(0)
        qtbot.mouseClick(dialog.remove_env_button, Qt.MouseButton.LeftButton)
        assert dialog.add_env(Path(sys.executable))  # what Add… does with the file chosen
        assert dialog.envs_list.count() == 1 and "old" not in dialog.envs_list.item(0).text()
        dialog.interval.setValue(3.0)
        dialog.autostart.setChecked(True)

    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    edit(dialog)
    _clicked(qtbot, dialog, QDialogButtonBox.StandardButton.Cancel)
    assert dialog.result() == QDialog.DialogCode.Rejected and not dialog.isVisible()
    assert path.read_bytes() == before
    assert not path.with_name("config.toml.bak").exists()
    assert not desktop_integration.autostart_enabled()

    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    edit(dialog)
    with qtbot.waitSignal(dialog.saved):
        _clicked(qtbot, dialog, QDialogButtonBox.StandardButton.Save)
    config = read_config()
    assert [str(env.python) for env in config.envs] == [sys.executable]
    assert config.monitor.interval_s == 3.0 and config.thresholds.temp_limit_c == 80.0
    assert path.with_name("config.toml.bak").read_bytes() == before
    assert desktop_integration.autostart_enabled()


def test_a_refused_environment_is_said_and_nothing_is_written(
    qtbot: QtBot, gputray_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warnings.append(text))
    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    assert not dialog.add_env(tmp_path / "nowhere" / "bin" / "python")
    assert warnings and "does not exist" in warnings[0]
    assert dialog.envs == [] and not app_paths().config_file.exists()


@pytest.mark.parametrize("language", ["en", "ja"])
def test_settings_is_short_enough_for_a_1366x768_screen_with_a_panel(
    qtbot: QtBot, gputray_home: Path, language: str
) -> None:
    """Issue 33 item 1: it was 816 px tall in Japanese. Its sections are tabs now; the X11 test checks
    the real window inside the available area of a 1366×768 screen with a 30-px bar."""
    assert install_language(language)
    try:
        dialog = SettingsDialog(None, read_config())
        qtbot.addWidget(dialog)
        dialog.show()
        qtbot.waitExposed(dialog)
        assert dialog.height() <= 768 - 30 - 40, dialog.size()  # 40: a generous title bar
        assert dialog.width() <= 1366
        report = audit(dialog)
        assert report.problems == [], report.problems
    finally:
        install_language("en")


def test_edit_my_recipes_file_without_a_file_launcher_shows_the_path(
    qtbot: QtBot, gputray_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 item 13: with nothing to open the file (no xdg-open on PATH; the offscreen platform opens
    nothing either), the button shows a window with the file's path, a Copy button and its text."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    dialog = SettingsDialog(None, read_config())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.tabs.setCurrentIndex(2)
    qtbot.mouseClick(dialog.open_recipes_button, Qt.MouseButton.LeftButton)
    viewer = dialog.recipes_viewer
    assert isinstance(viewer, FileViewer)
    qtbot.waitExposed(viewer)
    recipes = app_paths().config_dir / "recipes.toml"
    assert viewer.path_field.text() == str(recipes) and recipes.is_file()
    assert "[[recipe]]" in viewer.text.toPlainText()  # the note the new file starts with
    qtbot.mouseClick(viewer.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == str(recipes)
    assert audit(viewer).problems == []


def test_a_broken_recipes_file_is_said_in_the_settings_language(qtbot: QtBot, gputray_home: Path) -> None:
    """#31: a malformed recipes.toml was said in English inside the Japanese settings. Its problem is a
    code: the recipes tab names the file, the recipe and the key in the language shown."""
    recipes = app_paths().config_dir / "recipes.toml"
    recipes.parent.mkdir(parents=True, exist_ok=True)
    recipes.write_text('[[recipe]]\nname = "mine"\nargv = ["t"]\npattern = ["*.x"]\n', encoding="utf-8")
    try:
        for language, shown in [
            ("en", f"Recipes could not be read: {recipes}: recipe 'mine': key 'pattern': unknown key"),
            ("ja", f"レシピを読めませんでした: {recipes}: レシピ「mine」: キー 'pattern' は使えません"),
        ]:
            assert install_language(language)
            dialog = SettingsDialog(None, read_config())
            qtbot.addWidget(dialog)
            assert dialog.recipes_list.count() == 1
            assert dialog.recipes_list.item(0).text().startswith(shown), dialog.recipes_list.item(0).text()
    finally:
        install_language("en")


def test_a_recipe_whose_task_keys_make_no_task_is_said_in_the_settings_language(
    qtbot: QtBot, gputray_home: Path
) -> None:
    """#31: what a recipe's task keys got wrong was the task check's English inside the Japanese settings
    (``RecipeBadTask.problem``); it is a code now, worded with the rest of the line."""
    recipes = app_paths().config_dir / "recipes.toml"
    recipes.parent.mkdir(parents=True, exist_ok=True)
    recipes.write_text(
        '[[recipe]]\nname = "mine"\npatterns = ["*.x"]\nargv = ["t", "{file}"]\nretries = -1\n',
        encoding="utf-8",
    )
    try:
        for language, shown in [
            ("en", f"Recipes could not be read: {recipes}: recipe 'mine': "),
            ("ja", f"レシピを読めませんでした: {recipes}: レシピ「mine」: "),
        ]:
            assert install_language(language)
            dialog = SettingsDialog(None, read_config())
            qtbot.addWidget(dialog)
            problem = {
                "en": "key 'retries': must be at least 0, got -1",
                "ja": "キー 'retries': 0 以上にしてください（値: -1）",
            }
            assert dialog.recipes_list.item(0).text() == shown + problem[language]
    finally:
        install_language("en")
