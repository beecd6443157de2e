from __future__ import annotations

import tomllib
from pathlib import Path

from pytestqt.qtbot import QtBot

from gputray.gui.settings_dialog import SettingsDialog, write_user_config
from gputray.scheduler.config import load_config
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
    dialog = SettingsDialog(None, load_config())
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
    config = load_config()
    assert config["monitor"]["interval_s"] == 2.5
    assert config["thresholds"]["temp_limit_c"] == 80.0
    assert config["gui"]["language"] == "ja"
    assert config["gui"]["notifications"]["job_started"] is False
    assert app_paths().config_file.is_file()
