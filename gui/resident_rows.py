"""The GPU card's residents: one line per resident holding memory on that GPU (issue 27).

::

    ComfyUI                         holds 9.8 GiB · idle 14 min
    Ollama                          holds 6.0 GiB · serving

The name elides (its whole line is in the tooltip); the figures are a :class:`FigureLabel`, never
elided, its width reserved for the widest figures in the current language. The lines are there only
while residents are: the card (and the panel, which refits) grows by a line when one appears.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from gputray.gui.resident_text import (
    resident_figure_templates,
    resident_figures,
    resident_line,
    resident_tooltip,
)
from gputray.gui.widgets import ElidedLabel, FigureLabel
from gputray.monitor.residents import ResidentView


class ResidentRow(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        self.name_label = ElidedLabel("", self)
        self.name_label.setObjectName("residentName")
        self.figures_label = FigureLabel(self)
        self.figures_label.setObjectName("residentFigures")
        row.addWidget(self.name_label)  # the figures follow the name: "ComfyUI  holds 9.8 GiB · idle 14 min"
        row.addWidget(self.figures_label)
        row.addStretch(1)

    def show_resident(self, resident: ResidentView, now_s: float, device_name: str) -> None:
        self.name_label.setText(resident.name)
        self.name_label.set_own_tooltip(resident_tooltip(resident, now_s, device_name))
        self.figures_label.set_figures(resident_figures(resident, now_s), *resident_figure_templates())
        self.setToolTip(resident_line(resident, now_s))


class ResidentRows(QWidget):
    """The residents on one GPU, largest first (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("gpuResidents")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self.rows: list[ResidentRow] = []
        self.residents: tuple[ResidentView, ...] = ()
        self._now_s = 0.0
        self._device_name = ""
        self.hide()

    def show_residents(self, residents: Sequence[ResidentView], now_s: float, device_name: str) -> bool:
        """Show these; True when the number of lines changed (the panel then refits)."""
        ordered = tuple(sorted(residents, key=lambda r: (-(r.held_bytes or 0), r.name)))
        self.residents, self._now_s, self._device_name = ordered, now_s, device_name
        changed = len(ordered) != len(self.rows)
        while len(self.rows) < len(ordered):
            row = ResidentRow(self)
            self._layout.addWidget(row)
            self.rows.append(row)
        while len(self.rows) > len(ordered):
            gone = self.rows.pop()
            self._layout.removeWidget(gone)
            gone.deleteLater()
        for row, resident in zip(self.rows, ordered, strict=True):
            row.show_resident(resident, now_s, device_name)
            row.show()
        self.setVisible(bool(ordered))
        return changed

    def retranslate(self) -> None:
        self.show_residents(self.residents, self._now_s, self._device_name)
