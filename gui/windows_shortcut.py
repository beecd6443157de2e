"""Windows shortcuts (.lnk) through the shell's own ``IShellLinkW`` COM object, called with ctypes.

This is what PowerShell's ``WScript.Shell.CreateShortcut`` does underneath, without starting PowerShell
(a second or more, and absent or a stub on some systems): the link is written by the shell itself, and
read back the same way to check it. Windows only; importing this module is safe anywhere.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_PATH_CHARS = 32_768
COINIT_APARTMENTTHREADED = 0x2
CLSCTX_INPROC_SERVER = 0x1
RPC_E_CHANGED_MODE = 0x80010106
STGM_READ = 0x0

# IShellLinkW slots (after IUnknown's QueryInterface, AddRef, Release).
_GET_PATH, _SET_DESCRIPTION, _SET_WORKING_DIRECTORY = 3, 7, 9
_GET_ARGUMENTS, _SET_ARGUMENTS, _SET_ICON_LOCATION, _SET_PATH = 10, 11, 17, 20
# IPersistFile slots.
_LOAD, _SAVE = 5, 6


class _Guid(ctypes.Structure):
    _fields_ = [
        ("Data1", ctypes.c_uint32),
        ("Data2", ctypes.c_uint16),
        ("Data3", ctypes.c_uint16),
        ("Data4", ctypes.c_uint8 * 8),
    ]


def _guid(text: str) -> _Guid:
    parts = text.split("-")
    tail = bytes.fromhex(parts[3] + parts[4])
    return _Guid(int(parts[0], 16), int(parts[1], 16), int(parts[2], 16), (ctypes.c_uint8 * 8)(*tail))


CLSID_SHELL_LINK = _guid("00021401-0000-0000-C000-000000000046")
IID_ISHELL_LINK_W = _guid("000214F9-0000-0000-C000-000000000046")
IID_IPERSIST_FILE = _guid("0000010b-0000-0000-C000-000000000046")


@dataclass(frozen=True)
class Shortcut:
    """What a .lnk starts: ``target`` with ``arguments`` (Send To appends the chosen files after them)."""

    target: str
    arguments: str


class ShortcutError(OSError):
    pass


def _ole32() -> Any:
    if sys.platform != "win32":
        raise ShortcutError("Windows shortcuts exist only on Windows")
    return ctypes.WinDLL("ole32")  # type: ignore[attr-defined,unused-ignore]


def _method(obj: ctypes.c_void_p, index: int, *argtypes: Any) -> Any:
    vtbl = ctypes.cast(obj, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))).contents
    proto = ctypes.WINFUNCTYPE(ctypes.c_long, ctypes.c_void_p, *argtypes)  # type: ignore[attr-defined,unused-ignore]
    return proto(vtbl[index])


def _check(hr: int, what: str) -> None:
    if hr < 0:
        raise ShortcutError(f"{what} failed with HRESULT 0x{hr & 0xFFFFFFFF:08X}")


class _ShellLink:
    """An IShellLinkW plus its IPersistFile, released on exit; COM initialised on this thread meanwhile."""

    def __enter__(self) -> _ShellLink:
        self._ole = _ole32()
        hr = self._ole.CoInitializeEx(None, COINIT_APARTMENTTHREADED)
        self._uninit = hr >= 0  # S_OK or S_FALSE; RPC_E_CHANGED_MODE: COM is already on, leave it be
        if hr < 0 and hr & 0xFFFFFFFF != RPC_E_CHANGED_MODE:
            _check(hr, "CoInitializeEx")
        self.link = ctypes.c_void_p()
        self.file = ctypes.c_void_p()
        try:
            _check(
                self._ole.CoCreateInstance(
                    ctypes.byref(CLSID_SHELL_LINK),
                    None,
                    CLSCTX_INPROC_SERVER,
                    ctypes.byref(IID_ISHELL_LINK_W),
                    ctypes.byref(self.link),
                ),
                "CoCreateInstance(ShellLink)",
            )
            query = _method(self.link, 0, ctypes.POINTER(_Guid), ctypes.POINTER(ctypes.c_void_p))
            _check(query(self.link, ctypes.byref(IID_IPERSIST_FILE), ctypes.byref(self.file)), "IPersistFile")
        except BaseException:
            self.__exit__()
            raise
        return self

    def call(self, index: int, *args: Any) -> None:
        _check(_method(self.link, index, *(type(a) for a in args))(self.link, *args), f"IShellLinkW[{index}]")

    def text(self, index: int, *extra: Any) -> str:
        buf = ctypes.create_unicode_buffer(MAX_PATH_CHARS)
        fn = _method(self.link, index, ctypes.c_wchar_p, ctypes.c_int, *(type(a) for a in extra))
        _check(fn(self.link, buf, MAX_PATH_CHARS, *extra), f"IShellLinkW[{index}]")
        return buf.value

    def persist(self, index: int, path: Path, flag: int) -> None:
        fn = _method(self.file, index, ctypes.c_wchar_p, ctypes.c_uint32)
        _check(fn(self.file, str(path), flag), "IPersistFile.Save" if index == _SAVE else "IPersistFile.Load")

    def __exit__(self, *exc: object) -> None:
        for obj in (getattr(self, "file", None), getattr(self, "link", None)):
            if obj:
                _method(obj, 2)(obj)  # Release
        if getattr(self, "_uninit", False):
            self._ole.CoUninitialize()


def write_shortcut(
    link: Path, target: Path, arguments: str = "", *, description: str = "", icon: Path | None = None
) -> None:
    """Create (or replace) ``link`` starting ``target arguments`` in the target's folder."""
    with _ShellLink() as shell:
        shell.call(_SET_PATH, ctypes.c_wchar_p(str(target)))
        shell.call(_SET_ARGUMENTS, ctypes.c_wchar_p(arguments))
        shell.call(_SET_WORKING_DIRECTORY, ctypes.c_wchar_p(str(target.parent)))
        if description:
            shell.call(_SET_DESCRIPTION, ctypes.c_wchar_p(description))
        if icon is not None:
            shell.call(_SET_ICON_LOCATION, ctypes.c_wchar_p(str(icon)), ctypes.c_int(0))
        shell.persist(_SAVE, link, 1)


def read_shortcut(link: Path) -> Shortcut:
    """What ``link`` starts, as the shell reads it."""
    with _ShellLink() as shell:
        shell.persist(_LOAD, link, STGM_READ)
        return Shortcut(
            target=shell.text(_GET_PATH, ctypes.c_void_p(None), ctypes.c_uint32(0)),
            arguments=shell.text(_GET_ARGUMENTS),
        )
