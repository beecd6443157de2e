"""The tray app: the only place that imports Qt.

PySide6 6.12.0 on CPython 3.11 drops a reference to ``None`` on every call of a method that returns
nothing (``setToolTip``, ``processEvents`` …) and to ``True``/``False`` on bool returns. A tray app
makes such calls all day, and after some ten thousand of them Python aborts with "none_dealloc:
deallocating None". CPython 3.12 made these objects immortal (PEP 683) by giving them a refcount no
program can exhaust; :func:`_immortalize_singletons` does the same on older Pythons before Qt loads.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: every `gputray` command imports this package (issue 31)
if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

IMMORTAL_REFCOUNT = 1 << 60


def _immortalize_singletons() -> None:
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    import ctypes

    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value = IMMORTAL_REFCOUNT


class _BeforeQt:
    """Makes the singletons immortal at the first import of PySide6, then steps aside: ``gputray``'s
    command line is in this package too (``gui.entry``) and never loads Qt, so it need not pay for
    ``ctypes`` (issue 31: every command starts in 50 ms)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "PySide6" or name.startswith(("PySide6.", "shiboken6")):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _immortalize_singletons()
        return None  # the usual finders find it


if "PySide6" in sys.modules or "shiboken6" in sys.modules:
    _immortalize_singletons()
else:
    sys.meta_path.insert(0, _BeforeQt())
