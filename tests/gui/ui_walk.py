"""Every text a window shows: walked widget by widget, for the language tests.

Collects window titles, tooltips, labels, buttons, group titles, combo items, tab names, item-view
headers and cells (display and tooltip), menu entries (submenus too), spin-box suffixes and
placeholders. Text that is data (file and task names, paths, process names) is removed by the caller
before judging, so what is left is the app's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QDoubleSpinBox,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QSpinBox,
    QTabWidget,
    QWidget,
)

from gputray.gui.layout_audit import columns
from gputray.gui.widgets import ElidedLabel

# Proper nouns, units and identifiers that stay as they are in Japanese.
ALLOWED = {
    "gputray", "gputrayw", "GPU", "CPU", "RAM", "VRAM", "GTT", "GiB", "MiB", "KiB", "MHz", "W", "PID",
    "GeForce", "RTX", "Ti", "Radeon", "NVIDIA", "AMD", "Intel", "Arc", "Python", "PyTorch", "Vulkan",
    "ROCm", "rocm", "CUDA", "HIP", "Real-ESRGAN", "ncnn", "ffmpeg", "llama.cpp", "GGUF", "PATH", "kill",
    "SIGTERM", "llama-server", "English", "Ubuntu", "torch", "upscale-image", "upscale-video",
    "llama-bench", "png", "jpg", "jpeg", "webp", "bmp", "tif", "tiff", "mp4", "mkv", "mov", "webm",
    "avi", "gguf", "py", "txt", "toml", "realesrgan-ncnn-vulkan", "ms", "OK", "PCIe", "RPM", "kJ",
    "cuda-checkpoint",
}  # fmt: skip
WORD = re.compile(r"[A-Za-z][A-Za-z0-9.+\-]*[A-Za-z0-9]|[A-Za-z]")
URL = re.compile(r"https?://\S+")
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")


def english_words(text: str, data: Iterable[str] = ()) -> list[str]:
    """Words of English (or any Latin-script word) left in ``text`` once data, URLs, units and proper
    nouns are taken out."""
    for d in sorted(data, key=len, reverse=True):
        if d:
            text = text.replace(d, " ")
    text = URL.sub(" ", text)
    words = [w.strip(".-+") for w in WORD.findall(text)]
    return [w for w in words if w and w not in ALLOWED and not re.fullmatch(r"[A-Za-z]\d*|\d+\w*", w)]


def menu_texts(menu: QMenu) -> list[str]:
    out: list[str] = []
    for action in menu.actions():
        out += action_texts(action)
    return out


def action_texts(action: QAction) -> list[str]:
    out = [action.text(), action.toolTip() if action.toolTip() != action.text().replace("&", "") else ""]
    sub = action.menu()
    if isinstance(sub, QMenu):
        out += [sub.title(), *menu_texts(sub)]
    return [t for t in out if t]


def _view_texts(view: QAbstractItemView, rows: int = 60) -> list[str]:
    model = view.model()
    if model is None:
        return []
    out: list[str] = []
    for orientation in (Qt.Orientation.Horizontal,):
        for section in range(columns(model)):
            header = model.headerData(section, orientation, Qt.ItemDataRole.DisplayRole)
            if header:
                out.append(str(header))
    for row in range(min(model.rowCount(QModelIndex()), rows)):
        for col in range(columns(model)):
            index = model.index(row, col, QModelIndex())
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                value = model.data(index, role)
                if value:
                    out.append(str(value))
    return out


def widget_texts(root: QWidget) -> list[str]:
    """Every text of ``root`` and its children, shown or not (a hidden tab shows when clicked)."""
    out: list[str] = [root.windowTitle()]
    for w in [root, *root.findChildren(QWidget)]:
        out.append(w.toolTip())
        if isinstance(w, ElidedLabel | QLabel):
            out.append(w.text())
        if isinstance(w, QAbstractButton):
            out.append(w.text())
        if isinstance(w, QGroupBox):
            out.append(w.title())
        if isinstance(w, QComboBox):
            out += [w.itemText(i) for i in range(w.count())]
        if isinstance(w, QTabWidget):
            out += [w.tabText(i) for i in range(w.count())]
        if isinstance(w, QAbstractItemView):
            out += _view_texts(w)
        if isinstance(w, QLineEdit):
            out.append(w.placeholderText())
        if isinstance(w, QSpinBox | QDoubleSpinBox):
            out += [w.prefix(), w.suffix()]
        if isinstance(w, QAbstractSpinBox):
            out.append(w.specialValueText())
        if isinstance(w, QMessageBox):
            out += [w.text(), w.informativeText(), w.detailedText()]
        if isinstance(w, QMenu):
            out += menu_texts(w)
    return [t for t in out if t]
