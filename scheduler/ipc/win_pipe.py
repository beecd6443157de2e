"""The owner's Windows named pipe, created with a DACL that admits only the user who runs gputray.

``multiprocessing`` creates pipe instances with the default security descriptor, whose DACL also grants
read access to Everyone and Anonymous: another local user could open the pipe (the HMAC key would still
refuse them, but only after the connection). Here every instance is created with the SDDL
``D:P(A;;GA;;;<user SID>)``: a protected DACL (nothing inherited) with one ACE, all access for the user
SID of this process's token. Anyone else's ``CreateFile`` on the pipe fails with
``ERROR_ACCESS_DENIED`` before a byte is exchanged; the key check stays as the second lock.
:func:`pipe_dacl` reads the DACL back by name, as another process sees it (the tests check it).

Windows only; importing this module is safe anywhere.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

SDDL_REVISION_1 = 1
DACL_SECURITY_INFORMATION = 0x4
SE_FILE_OBJECT = 1
TOKEN_QUERY = 0x8
TOKEN_USER = 1
PIPE_BUFSIZE = 8192  # what multiprocessing uses
INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value


class _SecurityAttributes(ctypes.Structure):
    _fields_ = [
        ("nLength", ctypes.c_uint32),
        ("lpSecurityDescriptor", ctypes.c_void_p),
        ("bInherit", ctypes.c_int),
    ]


def _dll(name: str) -> Any:
    if sys.platform != "win32":
        raise OSError("named pipes with a DACL exist only on Windows")
    return ctypes.WinDLL(name, use_last_error=True)  # type: ignore[attr-defined,unused-ignore]


def _fail(call: str) -> OSError:
    code = ctypes.get_last_error()  # type: ignore[attr-defined,unused-ignore]
    error: OSError = ctypes.WinError(code, f"{call} failed")  # type: ignore[attr-defined,unused-ignore]
    return error


def _local_text(kernel32: Any, call: str, fill: Callable[[Any], int]) -> str:
    """The text a Windows call hands back as a string it allocated (``fill`` makes the call with a
    pointer to the out parameter and returns its BOOL), copied and then freed with ``LocalFree``."""
    text = ctypes.c_wchar_p()
    if not fill(ctypes.byref(text)):
        raise _fail(call)
    try:
        return str(text.value)
    finally:
        kernel32.LocalFree(text)


def current_user_sid() -> str:
    """The user SID of this process's token, as text (``S-1-5-21-…``)."""
    advapi32, kernel32 = _dll("advapi32"), _dll("kernel32")
    kernel32.GetCurrentProcess.restype = ctypes.c_void_p
    token = ctypes.c_void_p()
    if not advapi32.OpenProcessToken(
        ctypes.c_void_p(kernel32.GetCurrentProcess()), TOKEN_QUERY, ctypes.byref(token)
    ):
        raise _fail("OpenProcessToken")
    try:
        size = ctypes.c_uint32(0)
        advapi32.GetTokenInformation(token, TOKEN_USER, None, 0, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        if not advapi32.GetTokenInformation(token, TOKEN_USER, buf, size, ctypes.byref(size)):
            raise _fail("GetTokenInformation")
        sid = ctypes.cast(buf, ctypes.POINTER(ctypes.c_void_p))[0]  # TOKEN_USER.User.Sid
        return _local_text(
            kernel32,
            "ConvertSidToStringSidW",
            lambda text: advapi32.ConvertSidToStringSidW(ctypes.c_void_p(sid), text),
        )
    finally:
        kernel32.CloseHandle(token)


def owner_only_sddl() -> str:
    return f"D:P(A;;GA;;;{current_user_sid()})"


def create_pipe(address: str, open_mode: int, pipe_mode: int, sddl: str) -> int:
    """``CreateNamedPipeW`` with the security descriptor ``sddl``; the handle as an int (as _winapi's)."""
    advapi32, kernel32 = _dll("advapi32"), _dll("kernel32")
    descriptor = ctypes.c_void_p()
    if not advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW(
        ctypes.c_wchar_p(sddl), SDDL_REVISION_1, ctypes.byref(descriptor), None
    ):
        raise _fail("ConvertStringSecurityDescriptorToSecurityDescriptorW")
    try:
        attributes = _SecurityAttributes(ctypes.sizeof(_SecurityAttributes), descriptor, 0)
        kernel32.CreateNamedPipeW.restype = ctypes.c_void_p
        kernel32.CreateNamedPipeW.argtypes = [
            ctypes.c_wchar_p,
            *[ctypes.c_uint32] * 6,
            ctypes.POINTER(_SecurityAttributes),
        ]
        handle = kernel32.CreateNamedPipeW(
            address,
            open_mode,
            pipe_mode,
            255,
            PIPE_BUFSIZE,
            PIPE_BUFSIZE,
            0xFFFFFFFF,
            ctypes.byref(attributes),
        )
        if handle is None or handle == INVALID_HANDLE_VALUE:
            raise _fail(f"CreateNamedPipeW({address})")
        return int(handle)
    finally:
        kernel32.LocalFree(descriptor)


def private_listener(address: str) -> Any:
    """A ``multiprocessing`` pipe listener whose every pipe instance carries :func:`owner_only_sddl`."""
    import importlib
    from multiprocessing import connection

    _winapi: Any = importlib.import_module("_winapi")

    sddl = owner_only_sddl()
    base: Any = connection.PipeListener  # type: ignore[attr-defined,unused-ignore]

    class PrivatePipeListener(base):  # type: ignore[misc]
        def _new_handle(self, first: bool = False) -> int:
            flags = _winapi.PIPE_ACCESS_DUPLEX | _winapi.FILE_FLAG_OVERLAPPED
            if first:  # a second owner fails here (ERROR_ACCESS_DENIED): it never replaces the first
                flags |= _winapi.FILE_FLAG_FIRST_PIPE_INSTANCE
            mode = _winapi.PIPE_TYPE_MESSAGE | _winapi.PIPE_READMODE_MESSAGE | _winapi.PIPE_WAIT
            return create_pipe(self._address, flags, mode, sddl)

    return PrivatePipeListener(address)


def pipe_dacl(address: str) -> str:
    """The DACL of the pipe ``address`` in SDDL, read by name as any other process would."""
    advapi32, kernel32 = _dll("advapi32"), _dll("kernel32")
    dacl, descriptor = ctypes.c_void_p(), ctypes.c_void_p()
    status = advapi32.GetNamedSecurityInfoW(
        ctypes.c_wchar_p(address),
        SE_FILE_OBJECT,
        DACL_SECURITY_INFORMATION,
        None,
        None,
        ctypes.byref(dacl),
        None,
        ctypes.byref(descriptor),
    )
    if status != 0:
        raise ctypes.WinError(status, f"GetNamedSecurityInfoW({address}) failed")  # type: ignore[attr-defined,unused-ignore]
    try:
        return _local_text(
            kernel32,
            "ConvertSecurityDescriptorToStringSecurityDescriptorW",
            lambda text: advapi32.ConvertSecurityDescriptorToStringSecurityDescriptorW(
                descriptor, SDDL_REVISION_1, DACL_SECURITY_INFORMATION, text, None
            ),
        )
    finally:
        kernel32.LocalFree(descriptor)
