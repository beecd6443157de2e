"""Settings: poll interval, thresholds, Python environments, recipes, notifications, autostart, language.

The dialog shows the typed ``Config`` it is given and writes only the values the user changed to the
user's config file (TOML), keeping every other key (``[[env]]`` entries are edited through
``gputray.scheduler.pyenvs.registry``, the one writer of that table): defaults the user never set stay
unwritten.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomli_w
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gputray.gui import desktop_integration, messages
from gputray.gui.i18n import tr, tr_noop
from gputray.gui.notifications import KINDS, kind_labels
from gputray.scheduler.config import Config, ConfigError, read_config, read_user_config
from gputray.scheduler.config import write_user_config as write_config_text
from gputray.scheduler.paths import app_paths

LANGUAGE_LABELS = {"auto": tr_noop("System (auto)"), "en": "English", "ja": "日本語"}


def write_user_config(updates: Mapping[str, Mapping[str, Any]], path: Path | None = None) -> Path:
    """Merge ``{table: {key: value}}`` into the user's config file; other tables stay as they are, and
    the file as it was is kept as ``config.toml.bak`` (its comments are not written back)."""
    path = path or app_paths().config_file
    data = read_user_config(path, malformed_hint=" (fix the file first; gputray will not overwrite it)")
    for table, values in updates.items():
        current = data.get(table)
        merged = dict(current) if isinstance(current, dict) else {}
        for key, value in values.items():
            if isinstance(value, Mapping):
                sub = merged.get(key)
                merged[key] = {**(sub if isinstance(sub, dict) else {}), **value}
            else:
                merged[key] = value
        data[table] = merged
    write_config_text(path, tomli_w.dumps(data), backup=True)  # TOML writers drop comments
    return path


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``after`` (tables of tables) whose value differs from ``before``."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        if isinstance(value, Mapping):
            inner = changed(before.get(key, {}), value)
            if inner:
                out[key] = inner
        elif before.get(key) != value:
            out[key] = value
    return out


def _without(tables: dict[str, dict[str, Any]], dotted: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``tables`` less the keys named ``"table.key"`` (or ``"table.inner.key"``)."""
    out = copy.deepcopy(tables)
    for name in dotted:
        *path, last = name.split(".")
        inner: Any = out
        for part in path:
            inner = inner.get(part) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            inner.pop(last, None)
    return out


class SettingsDialog(QDialog):
    saved = Signal(dict)

    def __init__(self, parent: QWidget | None = None, config: Config | None = None) -> None:
        super().__init__(parent)
        cfg = config if config is not None else read_config()
        th = cfg.thresholds
        layout = QVBoxLayout(self)

        form = QFormLayout()
        self.form_labels: list[tuple[QLabel, str]] = []

        def add_row(label: str, widget: QWidget) -> None:
            text = QLabel(self)
            self.form_labels.append((text, label))
            form.addRow(text, widget)

        self.interval = QDoubleSpinBox(self)
        self.interval.setRange(0.25, 60.0)
        self.interval.setSingleStep(0.25)
        self.interval.setSuffix(" s")
        self.interval.setValue(cfg.monitor.interval_s)
        add_row(tr_noop("Poll interval"), self.interval)
        self.busy_util = self._spin(th.busy_util_percent, 1, 100, " %")
        add_row(tr_noop("Busy above (external use)"), self.busy_util)
        self.temp_limit = self._spin(th.temp_limit_c, 40, 120, " °C")
        add_row(tr_noop("Temperature limit, discrete GPU"), self.temp_limit)
        self.igpu_temp_limit = self._spin(th.igpu_temp_limit_c, 40, 120, " °C")
        add_row(tr_noop("Temperature limit, integrated GPU"), self.igpu_temp_limit)
        self.language = QComboBox(self)
        for key, label in LANGUAGE_LABELS.items():
            self.language.addItem(tr(label) if key == "auto" else label, key)
        idx = self.language.findData(cfg.gui.language)
        self.language.setCurrentIndex(max(idx, 0))
        add_row(tr_noop("Language"), self.language)
        self.autostart = QCheckBox(self)
        self.autostart.setChecked(desktop_integration.autostart_enabled())
        form.addRow("", self.autostart)
        layout.addLayout(form)

        envs_box = QGroupBox(self)
        self.envs_box = envs_box
        envs_layout = QVBoxLayout(envs_box)
        self.envs_list = QListWidget(envs_box)
        envs_layout.addWidget(self.envs_list)
        row = QHBoxLayout()
        add = QPushButton(envs_box)
        remove = QPushButton(envs_box)
        self.add_env_button, self.remove_env_button = add, remove
        add.clicked.connect(self._add_env)
        remove.clicked.connect(self._remove_env)
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        envs_layout.addLayout(row)
        layout.addWidget(envs_box)
        self._load_envs()

        recipes_box = QGroupBox(self)
        self.recipes_box = recipes_box
        rl = QVBoxLayout(recipes_box)
        self.recipes_list = QListWidget(recipes_box)
        rl.addWidget(self.recipes_list)
        self.open_recipes_button = QPushButton(recipes_box)
        self.open_recipes_button.clicked.connect(self._edit_recipes)
        rl.addWidget(self.open_recipes_button)
        layout.addWidget(recipes_box)

        notes_box = QGroupBox(self)
        self.notes_box = notes_box
        nl = QVBoxLayout(notes_box)
        enabled = cfg.gui.notifications
        self.notify_checks: dict[str, QCheckBox] = {}
        for kind in kind_labels():
            box = QCheckBox(notes_box)
            box.setChecked(enabled.get(kind, True))
            nl.addWidget(box)
            self.notify_checks[kind] = box
        layout.addWidget(notes_box)

        self.config_label = QLabel(self)
        self.config_label.setWordWrap(True)
        self.config_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.config_label)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, parent=self
        )
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.retranslate()
        # What the user saw: only what differs from it is written, and a value the file has wrong (shown
        # as its default) counts as not seen, so Save writes the shown value over the bad one.
        self.shown = _without(self.values(), [p.key for p in cfg.problems if not p.unknown])

    def retranslate(self) -> None:
        self.setWindowTitle(tr("gputray settings"))
        for label, source in self.form_labels:
            label.setText(tr(source))
        self.language.setItemText(self.language.findData("auto"), tr(LANGUAGE_LABELS["auto"]))
        self.autostart.setText(tr("Start gputray when I log in"))
        self.envs_box.setTitle(tr("Python environments"))
        self.add_env_button.setText(tr("Add…"))
        self.remove_env_button.setText(tr("Remove"))
        self.recipes_box.setTitle(tr("Recipes (what a dropped file becomes)"))
        self.open_recipes_button.setText(tr("Edit my recipes file"))
        self.notes_box.setTitle(tr("Notifications"))
        for kind, kind_label in kind_labels().items():
            self.notify_checks[kind].setText(kind_label)
        self.config_label.setText(tr("Saved in {path}").format(path=app_paths().config_file))
        self._load_recipes()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def _load_recipes(self) -> None:
        self.recipes_list.clear()
        try:
            from gputray.scheduler.tasks.recipes import load_recipes

            for r in load_recipes():
                description = messages.translate(r.description)
                self.recipes_list.addItem(f"{r.name} — {', '.join(r.patterns)} — {description}")
        except Exception as exc:
            self.recipes_list.addItem(
                tr("Recipes could not be read: {error}").format(error=messages.translate(str(exc)))
            )

    def _spin(self, value: float, lo: float, hi: float, suffix: str) -> QDoubleSpinBox:
        spin = QDoubleSpinBox(self)
        spin.setRange(lo, hi)
        spin.setSuffix(suffix)
        spin.setValue(value)
        return spin

    def _load_envs(self) -> None:
        from gputray.scheduler.pyenvs.registry import load_envs

        self.envs_list.clear()
        try:
            for env in load_envs():
                extra = " ".join(f"{k}={v}" for k, v in env.extra_env.items())
                self.envs_list.addItem(f"{env.name} — {env.python} {extra}".rstrip())
        except Exception as exc:
            self.envs_list.addItem(tr("Environments could not be read: {error}").format(error=exc))

    def _add_env(self) -> None:
        from gputray.scheduler.pyenvs.registry import add_env

        path, _ = QFileDialog.getOpenFileName(self, tr("Choose a Python interpreter"))
        if not path:
            return
        try:
            add_env(Path(path))
        except Exception as exc:
            QMessageBox.warning(self, tr("Python environments"), messages.translate(str(exc)))
        self._load_envs()

    def _remove_env(self) -> None:
        from gputray.scheduler.pyenvs.registry import remove_env

        item = self.envs_list.currentItem()
        if item is None:
            return
        try:
            remove_env(item.text().split(" — ")[0])
        except Exception as exc:
            QMessageBox.warning(self, tr("Python environments"), str(exc))
        self._load_envs()

    def _edit_recipes(self) -> None:
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        path = app_paths().config_dir / "recipes.toml"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            note = "# Your recipes: copy a [[recipe]] from the shipped recipes.toml here to change it.\n"
            path.write_text(note, "utf-8")
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def values(self) -> dict[str, dict[str, Any]]:
        return {
            "monitor": {"interval_s": round(self.interval.value(), 2)},
            "thresholds": {
                "busy_util_percent": self.busy_util.value(),
                "temp_limit_c": self.temp_limit.value(),
                "igpu_temp_limit_c": self.igpu_temp_limit.value(),
            },
            "gui": {
                "language": str(self.language.currentData()),
                "notifications": {k: self.notify_checks[k].isChecked() for k in KINDS},
            },
        }

    def _save(self) -> None:
        values = self.values()
        try:
            edits = changed(self.shown, values)
            if edits:
                write_user_config(edits)
            if self.autostart.isChecked() != desktop_integration.autostart_enabled():
                desktop_integration.set_autostart(self.autostart.isChecked())
        except (OSError, ValueError, ConfigError) as exc:  # ConfigError: a malformed file, left alone
            QMessageBox.warning(self, tr("gputray settings"), str(exc))
            return
        self.saved.emit(values)
        self.accept()
