"""The panel's drop zone: where files are dropped to queue them, saying to pin the panel first."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QFrame, QSizePolicy, QVBoxLayout, QWidget

from gputray.gui.device_card import secondary_style
from gputray.gui.i18n import tr
from gputray.gui.theme import colors
from gputray.gui.widgets import FigureLabel, WrappedLabel


class DropZone(QFrame):
    """Where files are dropped; says, visibly, to pin the panel before dragging from another window."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dropZone")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(1)
        # whole, always: the drop zone is useless if its words are cut (the audit checks both)
        self.title = FigureLabel(self)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.hint = WrappedLabel(self)
        self.hint.setProperty("primaryFigure", True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.title)
        layout.addWidget(self.hint)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.pinned = False
        self._highlight = False
        self.retranslate()
        self.set_highlight(False)

    def retranslate(self) -> None:
        self.title.set_figures(tr("Drop files here to queue them"))
        self.set_pinned(self.pinned)

    def set_pinned(self, pinned: bool) -> None:
        self.pinned = pinned
        if pinned:
            self.hint.setText(tr("Pinned: the panel stays open while you drag files here."))
        else:
            self.hint.setText(tr("Dragging from another window? Pin the panel first (Pin, top right)."))

    def text(self) -> str:
        return self.title.text()

    def set_highlight(self, on: bool) -> None:
        self._highlight = on
        c = colors()
        color = c.accent if on else c.secondary_text
        style = f"border: 2px dashed {color}; border-radius: 6px"
        self.setStyleSheet(f"QFrame#dropZone {{ {style} }}")
        self.hint.setStyleSheet(secondary_style())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
