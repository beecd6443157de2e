"""A file shown where no program opens it: its path (selectable, with a Copy button) and its text.

Used for "Edit my recipes file" when the desktop has no file launcher (``QDesktopServices.openUrl``
fails: no xdg-open, a bare window manager): the user learns where the file is and can copy the path
into an editor, instead of a log line nobody sees (issue 33).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gputray.gui.i18n import tr
from gputray.gui.window_fit import fit_on_screen

MAX_SHOWN_BYTES = 256 * 1024


class FileViewer(QDialog):
    def __init__(self, path: Path, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("file viewer")
        self.path = path
        self.title = title
        layout = QVBoxLayout(self)
        self.hint = QLabel(self)
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        row = QHBoxLayout()
        self.path_field = QLineEdit(str(path), self)
        self.path_field.setReadOnly(True)
        self.path_field.setCursorPosition(0)
        row.addWidget(self.path_field, 1)
        self.copy_button = QPushButton(self)
        self.copy_button.clicked.connect(self.copy_path)
        row.addWidget(self.copy_button)
        layout.addLayout(row)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        layout.addWidget(self.text, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, parent=self)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.resize(640, 420)
        self.reload()
        self.retranslate()

    def reload(self) -> None:
        try:
            with self.path.open("rb") as f:
                data = f.read(MAX_SHOWN_BYTES + 1)
            shown = data[:MAX_SHOWN_BYTES].decode("utf-8", errors="replace")
            self.text.setPlainText(shown + ("\n…" if len(data) > MAX_SHOWN_BYTES else ""))
        except OSError as exc:
            self.text.setPlainText(str(exc))

    def retranslate(self) -> None:
        self.setWindowTitle(f"gputray — {self.title}")
        self.hint.setText(tr("No program here opens this file. Open it in your editor from this path:"))
        self.copy_button.setText(tr("Copy path"))

    def copy_path(self) -> None:
        QGuiApplication.clipboard().setText(str(self.path))
        self.copy_button.setText(tr("Copied"))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        fit_on_screen(self)
