"""The tray app: the only place that imports Qt.

PySide6 6.12.0 on CPython 3.11 drops a reference to ``None`` on every call of a method that returns
nothing (``setToolTip``, ``processEvents`` …) and to ``True``/``False`` on bool returns. A tray app
makes such calls all day, and after some ten thousand of them Python aborts with "none_dealloc:
deallocating None". CPython 3.12 made these objects immortal (PEP 683) by giving them a refcount no
program can exhaust; :func:`_immortalize_singletons` does the same on older Pythons before Qt loads.
"""

from __future__ import annotations

import ctypes
import sys

IMMORTAL_REFCOUNT = 1 << 60


def _immortalize_singletons() -> None:
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value = IMMORTAL_REFCOUNT


_immortalize_singletons()
