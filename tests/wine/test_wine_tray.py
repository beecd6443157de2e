"""The tray under Wine: why it cannot start, found from the DLLs themselves.

This module runs last on purpose: after the failed Qt load, Wine's desktop process (explorer.exe) exits
within seconds, and Wine's Vulkan (tests/wine/test_wine_monitor.py) hangs without it.
"""

from __future__ import annotations

import pytest
from winpython import WinePython


def test_the_tray_needs_a_windows_dll_that_this_wine_lacks(win: WinePython) -> None:
    """The tray itself is tested on X11 (tests/e2e); under Wine Qt cannot load. This says precisely why,
    from the DLLs themselves: a test that starts once Wine (or Qt) changes."""
    qt = win.run("-c", "import PySide6.QtCore")
    if qt.returncode == 0:
        pytest.fail("Qt loads under this Wine now: write the tray test (icon in Wine's tray, click → panel)")
    assert "DLL load failed while importing QtCore" in qt.stderr, qt.text
    missing = win.value(MISSING_IMPORTS)
    assert isinstance(missing, list)
    assert ["Qt6Core.dll", "icuuc.dll"] in missing, missing
    pytest.skip(
        "the tray cannot start under Wine 8: Qt6Core.dll (PySide6-Essentials win_amd64) imports icuuc.dll, "
        "the ICU that Windows 10 1903+ ships in System32 and Wine does not have (found by reading the PE "
        f"import tables of QtCore.pyd and its DLLs against C:\\windows\\system32): {missing}"
    )


# Walks the import tables of QtCore.pyd and the DLLs it pulls in; prints [importer, missing DLL] pairs.
MISSING_IMPORTS = r"""
import json, os, struct, sys
from pathlib import Path
from importlib.util import find_spec
qt, shiboken = (Path(find_spec(name).submodule_search_locations[0]) for name in ("PySide6", "shiboken6"))
search = [qt, shiboken, Path(sys.executable).parent, Path(os.environ["SystemRoot"]) / "system32"]
def imports(path):
    d = path.read_bytes()
    pe = struct.unpack_from("<I", d, 0x3C)[0]
    count, optional = struct.unpack_from("<H", d, pe + 6)[0], struct.unpack_from("<H", d, pe + 20)[0]
    sections = [struct.unpack_from("<IIII", d, pe + 24 + optional + 40 * i + 8) for i in range(count)]
    def at(rva):
        return next(rva - va + raw for size, va, n, raw in sections if va <= rva < va + max(size, n))
    rva = struct.unpack_from("<I", d, pe + 24 + 112 + 8)[0]
    names, o = [], at(rva)
    while (name := struct.unpack_from("<I", d, o + 12)[0]):
        names.append(d[at(name):d.index(b"\0", at(name))].decode())
        o += 20
    return names
missing, seen, todo = [], set(), [qt / "QtCore.pyd"]
while todo:
    path = todo.pop()
    for name in imports(path):
        if name.lower().startswith(("api-ms-", "ext-ms-")) or name.lower() in seen:
            continue  # API sets resolve inside the loader
        seen.add(name.lower())
        found = next((f / name for f in search if (f / name).exists()), None)
        if found is None:
            missing.append([path.name, name])
        elif found.parent == qt:
            todo.append(found)
print(json.dumps(missing))
"""
