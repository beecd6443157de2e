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
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gputray.gui import desktop_integration, i18n, messages
from gputray.gui.i18n import tr, tr_noop
from gputray.gui.notifications import KINDS, kind_labels
from gputray.gui.window_fit import fit_on_screen
from gputray.scheduler.client.connection import app_paths
from gputray.scheduler.client.settings import Config, ConfigError, PythonEnv, read_config, read_user_config
from gputray.scheduler.client.settings import write_user_config as write_config_text

LANGUAGE_LABELS = {"auto": tr_noop("System (auto)"), "en": "English", "ja": "日本語"}


def write_user_config(
    updates: Mapping[str, Mapping[str, Any]], path: Path | None = None, *, backup: bool = True
) -> Path:
    """Merge ``{table: {key: value}}`` into the user's config file; other tables stay as they are, and
    the file as it was is kept as ``config.toml.bak`` (its comments are not written back) unless
    ``backup`` is False (Save wrote the environments first and kept the file as it was then)."""
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
    write_config_text(path, tomli_w.dumps(data), backup=backup)  # TOML writers drop comments
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
    """Nothing is written until Save: Cancel (or Esc, or closing the window) leaves ``config.toml``,
    the environments in it and autostart as they were (issue 33). The sections are tabs, so the dialog
    fits a 1366×768 screen with a panel bar in either language."""

    saved = Signal(dict)

    def __init__(self, parent: QWidget | None = None, config: Config | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("settings")
        cfg = config if config is not None else read_config()
        th = cfg.thresholds
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget(self)
        self.tabs.setUsesScrollButtons(False)  # every tab's name in sight: the dialog is as wide as they are
        layout.addWidget(self.tabs)

        general = QWidget(self.tabs)
        form = QFormLayout(general)
        self.form_labels: list[tuple[QLabel, str]] = []

        def add_row(label: str, widget: QWidget) -> None:
            text = QLabel(general)
            self.form_labels.append((text, label))
            form.addRow(text, widget)

        self.interval = QDoubleSpinBox(general)
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
        self.language = QComboBox(general)
        for key, label in LANGUAGE_LABELS.items():
            self.language.addItem(tr(label) if key == "auto" else label, key)
        idx = self.language.findData(cfg.gui.language)
        self.language.setCurrentIndex(max(idx, 0))
        add_row(tr_noop("Language"), self.language)
        self.autostart = QCheckBox(general)
        self.autostart.setChecked(desktop_integration.autostart_enabled())
        form.addRow("", self.autostart)
        self.tabs.addTab(general, "")

        envs_tab = QWidget(self.tabs)
        self.envs_box = envs_tab
        envs_layout = QVBoxLayout(envs_tab)
        self.envs_list = QListWidget(envs_tab)
        envs_layout.addWidget(self.envs_list)
        row = QHBoxLayout()
        add = QPushButton(envs_tab)
        remove = QPushButton(envs_tab)
        self.add_env_button, self.remove_env_button = add, remove
        add.clicked.connect(self._add_env)
        remove.clicked.connect(self._remove_env)
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        envs_layout.addLayout(row)
        self.envs_note = QLabel(envs_tab)
        self.envs_note.setWordWrap(True)
        envs_layout.addWidget(self.envs_note)
        self.tabs.addTab(envs_tab, "")
        self.envs_error: str | None = None
        self.saved_envs = self._read_envs()
        self.envs: list[PythonEnv] = list(self.saved_envs)
        self._show_envs()

        recipes_tab = QWidget(self.tabs)
        self.recipes_box = recipes_tab
        rl = QVBoxLayout(recipes_tab)
        self.recipes_note = QLabel(recipes_tab)
        self.recipes_note.setWordWrap(True)
        rl.addWidget(self.recipes_note)
        self.recipes_list = QListWidget(recipes_tab)
        rl.addWidget(self.recipes_list)
        self.open_recipes_button = QPushButton(recipes_tab)
        self.open_recipes_button.clicked.connect(self._edit_recipes)
        rl.addWidget(self.open_recipes_button)
        self.tabs.addTab(recipes_tab, "")
        self.recipes_viewer: QDialog | None = None

        notes_tab = QWidget(self.tabs)
        self.notes_box = notes_tab
        nl = QVBoxLayout(notes_tab)
        enabled = cfg.gui.notifications
        self.notify_checks: dict[str, QCheckBox] = {}
        for kind in kind_labels():
            box = QCheckBox(notes_tab)
            box.setChecked(enabled.get(kind, True))
            nl.addWidget(box)
            self.notify_checks[kind] = box
        nl.addStretch(1)
        self.tabs.addTab(notes_tab, "")

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
        for i, title in enumerate(
            (
                tr("General"),
                tr("Python environments"),
                tr("Recipes"),
                tr("Notifications"),
            )
        ):
            self.tabs.setTabText(i, title)
        self.add_env_button.setText(tr("Add…"))
        self.remove_env_button.setText(tr("Remove"))
        self.envs_note.setText(tr("Added and removed environments are written to the config file on Save."))
        self.recipes_note.setText(tr("Recipes (what a dropped file becomes)"))
        self.open_recipes_button.setText(tr("Edit my recipes file"))
        for kind, kind_label in kind_labels().items():
            self.notify_checks[kind].setText(kind_label)
        self.config_label.setText(tr("Saved in {path}").format(path=app_paths().config_file))
        self._show_envs()
        self._load_recipes()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        fit_on_screen(self)

    def _load_recipes(self) -> None:
        self.recipes_list.clear()
        try:
            from gputray.scheduler.client.tasks import load_recipes

            for r in load_recipes():
                description = r.described(i18n.current_language())
                self.recipes_list.addItem(f"{r.name} — {', '.join(r.patterns)} — {description}")
        except Exception as exc:
            self.recipes_list.addItem(
                tr("Recipes could not be read: {error}").format(error=messages.said(exc))
            )

    def _spin(self, value: float, lo: float, hi: float, suffix: str) -> QDoubleSpinBox:
        spin = QDoubleSpinBox(self)
        spin.setRange(lo, hi)
        spin.setSuffix(suffix)
        spin.setValue(value)
        return spin

    # -- Python environments: a list of its own until Save ----------------------------------------
    def _read_envs(self) -> list[PythonEnv]:
        from gputray.scheduler.client.settings import load_envs

        try:
            return load_envs()
        except Exception as exc:  # a bad [[env]] entry: shown, and nothing of it is written back
            self.envs_error = str(exc)
            return []

    def _show_envs(self) -> None:
        self.envs_list.clear()
        if self.envs_error is not None:
            self.envs_list.addItem(
                tr("Environments could not be read: {error}").format(error=self.envs_error)
            )
            return
        for env in self.envs:
            extra = " ".join(f"{k}={v}" for k, v in env.extra_env.items())
            self.envs_list.addItem(f"{env.name} — {env.python} {extra}".rstrip())

    def _add_env(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, tr("Choose a Python interpreter"))
        if path:
            self.add_env(Path(path))

    def add_env(self, python: Path) -> bool:
        """Check ``python`` as ``gputray envs add`` does and list it; written on Save. False (and a
        message box saying why) when it is refused."""
        from gputray.scheduler.client.settings import env_to_add

        if self.envs_error is not None:
            QMessageBox.warning(self, tr("Python environments"), self.envs_error)
            return False
        try:
            env = env_to_add(self.envs, python)
        except Exception as exc:
            QMessageBox.warning(self, tr("Python environments"), str(exc))
            return False
        self.envs.append(env)
        self._show_envs()
        return True

    def _remove_env(self) -> None:
        row = self.envs_list.currentRow()
        if self.envs_error is None and 0 <= row < len(self.envs):
            del self.envs[row]
            self._show_envs()

    # -- recipes --------------------------------------------------------------------------------------
    def _edit_recipes(self) -> None:
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        path = app_paths().config_dir / "recipes.toml"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            note = "# Your recipes: copy a [[recipe]] from the shipped recipes.toml here to change it.\n"
            path.write_text(note, "utf-8")
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            # No program opens it (no xdg-open, a bare window manager): say where it is, in a window
            # that shows it and copies its path, instead of a line in the log nobody sees.
            from gputray.gui.file_viewer import FileViewer

            self.recipes_viewer = FileViewer(path, tr("Your recipes file"), self)
            self.recipes_viewer.show()

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
        from gputray.scheduler.client.settings import save_envs

        values = self.values()
        try:
            envs_changed = self.envs_error is None and self.envs != self.saved_envs
            if envs_changed:
                save_envs(self.envs)  # keeps the file as it was in config.toml.bak
            edits = changed(self.shown, values)
            if edits:
                write_user_config(edits, backup=not envs_changed)
            if self.autostart.isChecked() != desktop_integration.autostart_enabled():
                desktop_integration.set_autostart(self.autostart.isChecked())
        except (OSError, ValueError, ConfigError) as exc:  # ConfigError: a malformed file, left alone
            QMessageBox.warning(self, tr("gputray settings"), str(exc))
            return
        self.saved_envs = list(self.envs)
        self.saved.emit(values)
        self.accept()
