"""The Windows layer of the PDH backend: ``PdhCtypesReader``, a thin ctypes layer over ``pdh.dll``
(``PdhAddEnglishCounterW`` so counter names work in any system language; wildcard instances so new
processes show up), DXGI for adapter names and sizes, and D3DKMT for each adapter's PCI address.
Nothing here runs on import; moved out of ``pdh.py`` whole (``pdh.py``'s docstring: the three layers).
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Sequence
from typing import Any

from gputray.monitor.backends.pdh_counters import COUNTER_PATHS, AdapterDesc, CounterArrays, CounterItem
from gputray.monitor.vulkan import format_luid

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------
# The Windows layer (ctypes over pdh.dll, dxgi.dll, gdi32.dll). Nothing below runs on import.

PDH_FMT_DOUBLE = 0x00000200
PDH_FMT_NOCAP100 = 0x00008000
PDH_CSTATUS_VALID_DATA = 0x00000000
PDH_CSTATUS_NEW_DATA = 0x00000001
PDH_MORE_DATA = 0x800007D2
PDH_NO_DATA = 0x800007D5
PDH_INVALID_DATA = 0xC0000BC6
DXGI_ERROR_NOT_FOUND = 0x887A0002
DXGI_ADAPTER_FLAG_SOFTWARE = 2
KMTQAITYPE_ADAPTERADDRESS = 6


class PdhError(OSError):
    def __init__(self, call: str, status: int) -> None:
        super().__init__(f"{call} failed with PDH status 0x{status & 0xFFFFFFFF:08X}")
        self.status = status & 0xFFFFFFFF


class _PdhFmtCounterValue(ctypes.Structure):
    class _Value(ctypes.Union):
        _fields_ = [
            ("longValue", ctypes.c_long),
            ("doubleValue", ctypes.c_double),
            ("largeValue", ctypes.c_longlong),
            ("stringValue", ctypes.c_void_p),
        ]

    _anonymous_ = ("value",)
    _fields_ = [("CStatus", ctypes.c_uint32), ("value", _Value)]


class _PdhFmtCounterValueItemW(ctypes.Structure):
    _fields_ = [("szName", ctypes.c_wchar_p), ("FmtValue", _PdhFmtCounterValue)]


class _Luid(ctypes.Structure):
    _fields_ = [("LowPart", ctypes.c_uint32), ("HighPart", ctypes.c_int32)]


class _DxgiAdapterDesc1(ctypes.Structure):
    _fields_ = [
        ("Description", ctypes.c_wchar * 128),
        ("VendorId", ctypes.c_uint32),
        ("DeviceId", ctypes.c_uint32),
        ("SubSysId", ctypes.c_uint32),
        ("Revision", ctypes.c_uint32),
        ("DedicatedVideoMemory", ctypes.c_size_t),
        ("DedicatedSystemMemory", ctypes.c_size_t),
        ("SharedSystemMemory", ctypes.c_size_t),
        ("AdapterLuid", _Luid),
        ("Flags", ctypes.c_uint32),
    ]


class _Guid(ctypes.Structure):
    _fields_ = [
        ("Data1", ctypes.c_uint32),
        ("Data2", ctypes.c_uint16),
        ("Data3", ctypes.c_uint16),
        ("Data4", ctypes.c_uint8 * 8),
    ]


# {770aae78-f26f-4dba-a829-253c83d1b387}
_IID_IDXGIFactory1 = _Guid(
    0x770AAE78, 0xF26F, 0x4DBA, (ctypes.c_uint8 * 8)(0xA8, 0x29, 0x25, 0x3C, 0x83, 0xD1, 0xB3, 0x87)
)


class _D3dkmtOpenAdapterFromLuid(ctypes.Structure):
    _fields_ = [("AdapterLuid", _Luid), ("hAdapter", ctypes.c_uint32)]


class _D3dkmtQueryAdapterInfo(ctypes.Structure):
    _fields_ = [
        ("hAdapter", ctypes.c_uint32),
        ("Type", ctypes.c_int),
        ("pPrivateDriverData", ctypes.c_void_p),
        ("PrivateDriverDataSize", ctypes.c_uint32),
    ]


class _D3dkmtAdapterAddress(ctypes.Structure):
    _fields_ = [
        ("BusNumber", ctypes.c_uint32),
        ("DeviceNumber", ctypes.c_uint32),
        ("FunctionNumber", ctypes.c_uint32),
    ]


class _D3dkmtCloseAdapter(ctypes.Structure):
    _fields_ = [("hAdapter", ctypes.c_uint32)]


def _windll(name: str) -> Any:
    if sys.platform != "win32":
        raise OSError(f"{name} exists only on Windows")
    loader: Any = getattr(ctypes, "WinDLL", None)
    if loader is None:
        raise OSError("ctypes.WinDLL is missing")
    return loader(name)


def _com_method(obj: ctypes.c_void_p, index: int, restype: Any, *argtypes: Any) -> Any:
    """Call slot ``index`` of a COM object's vtable."""
    vtbl = ctypes.cast(obj, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))).contents
    proto = getattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE)(restype, ctypes.c_void_p, *argtypes)
    return proto(vtbl[index])


def dxgi_adapters() -> list[AdapterDesc]:
    """Every adapter DXGI lists, with its PCI address from D3DKMT where the kernel tells it."""
    dxgi = _windll("dxgi")
    factory = ctypes.c_void_p()
    hr = dxgi.CreateDXGIFactory1(ctypes.byref(_IID_IDXGIFactory1), ctypes.byref(factory))
    if hr != 0:
        raise OSError(f"CreateDXGIFactory1 failed with 0x{hr & 0xFFFFFFFF:08X}")
    out: list[AdapterDesc] = []
    try:
        enum_adapters1 = _com_method(
            factory, 12, ctypes.c_long, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)
        )
        i = 0
        while True:
            adapter = ctypes.c_void_p()
            hr = enum_adapters1(factory, i, ctypes.byref(adapter))
            if hr & 0xFFFFFFFF == DXGI_ERROR_NOT_FOUND or hr != 0:
                break
            try:
                desc = _DxgiAdapterDesc1()
                get_desc1 = _com_method(adapter, 10, ctypes.c_long, ctypes.POINTER(_DxgiAdapterDesc1))
                if get_desc1(adapter, ctypes.byref(desc)) == 0:
                    luid = (desc.AdapterLuid.HighPart, desc.AdapterLuid.LowPart)
                    out.append(
                        AdapterDesc(
                            luid=format_luid(*luid),
                            name=desc.Description,
                            vendor_id=desc.VendorId,
                            device_id=desc.DeviceId,
                            revision=desc.Revision,
                            dedicated_video_bytes=desc.DedicatedVideoMemory,
                            shared_system_bytes=desc.SharedSystemMemory,
                            pci_bdf=_d3dkmt_bdf(desc.AdapterLuid),
                            software=bool(desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE),
                        )
                    )
            finally:
                _com_method(adapter, 2, ctypes.c_ulong)(adapter)  # Release
            i += 1
    finally:
        _com_method(factory, 2, ctypes.c_ulong)(factory)
    return out


def _d3dkmt_bdf(luid: _Luid) -> str | None:
    """The adapter's PCI address (domain 0) via D3DKMTQueryAdapterInfo(KMTQAITYPE_ADAPTERADDRESS)."""
    try:
        gdi = _windll("gdi32")
        opened = _D3dkmtOpenAdapterFromLuid(AdapterLuid=luid)
        if gdi.D3DKMTOpenAdapterFromLuid(ctypes.byref(opened)) != 0:
            return None
        try:
            addr = _D3dkmtAdapterAddress()
            query = _D3dkmtQueryAdapterInfo(
                hAdapter=opened.hAdapter,
                Type=KMTQAITYPE_ADAPTERADDRESS,
                pPrivateDriverData=ctypes.cast(ctypes.byref(addr), ctypes.c_void_p),
                PrivateDriverDataSize=ctypes.sizeof(addr),
            )
            if gdi.D3DKMTQueryAdapterInfo(ctypes.byref(query)) != 0:
                return None
        finally:
            gdi.D3DKMTCloseAdapter(ctypes.byref(_D3dkmtCloseAdapter(hAdapter=opened.hAdapter)))
        if addr.BusNumber > 0xFF or addr.DeviceNumber > 0x1F or addr.FunctionNumber > 7:
            return None  # not on PCI (software or remote adapters report 0xFFFFFFFF)
        return f"0000:{addr.BusNumber:02x}:{addr.DeviceNumber:02x}.{addr.FunctionNumber}"
    except (OSError, AttributeError):
        return None


class PdhCtypesReader:
    """The real reader: pdh.dll through ctypes. Only usable on Windows."""

    def __init__(self) -> None:
        self._pdh: Any = None
        self._query = ctypes.c_void_p()
        self._counters: dict[str, ctypes.c_void_p] = {}

    def open(self) -> None:
        if self._pdh is None:
            self._pdh = _windll("pdh")
        self.close()
        query = ctypes.c_void_p()
        status = self._pdh.PdhOpenQueryW(None, ctypes.c_size_t(0), ctypes.byref(query))
        if status != 0:
            raise PdhError("PdhOpenQueryW", status)
        self._query = query
        for cid, path in COUNTER_PATHS.items():
            counter = ctypes.c_void_p()
            status = self._pdh.PdhAddEnglishCounterW(
                query, ctypes.c_wchar_p(path), ctypes.c_size_t(0), ctypes.byref(counter)
            )
            if status != 0:
                raise PdhError(f"PdhAddEnglishCounterW({path})", status)
            self._counters[cid] = counter

    def collect(self) -> CounterArrays:
        if self._pdh is None or not self._query:
            raise OSError("PDH query is not open")
        status = self._pdh.PdhCollectQueryData(self._query)
        if status != 0:
            raise PdhError("PdhCollectQueryData", status)
        return {cid: self._array(counter) for cid, counter in self._counters.items()}

    def _array(self, counter: ctypes.c_void_p) -> list[CounterItem]:
        fmt = PDH_FMT_DOUBLE | PDH_FMT_NOCAP100
        for _ in range(3):  # instances may appear between the size query and the read
            size = ctypes.c_uint32(0)
            count = ctypes.c_uint32(0)
            status = (
                self._pdh.PdhGetFormattedCounterArrayW(
                    counter, fmt, ctypes.byref(size), ctypes.byref(count), None
                )
                & 0xFFFFFFFF
            )
            if status in (PDH_NO_DATA, PDH_INVALID_DATA):
                return []  # no instances yet, or a rate counter before its second collection
            if status not in (PDH_MORE_DATA, 0):
                raise PdhError("PdhGetFormattedCounterArrayW", status)
            buf = ctypes.create_string_buffer(max(size.value, 1))
            status = (
                self._pdh.PdhGetFormattedCounterArrayW(
                    counter, fmt, ctypes.byref(size), ctypes.byref(count), buf
                )
                & 0xFFFFFFFF
            )
            if status == PDH_MORE_DATA:
                continue
            if status != 0:
                raise PdhError("PdhGetFormattedCounterArrayW", status)
            items = ctypes.cast(buf, ctypes.POINTER(_PdhFmtCounterValueItemW))
            return [
                CounterItem(
                    instance=items[i].szName or "",
                    value=float(items[i].FmtValue.doubleValue),
                    valid=items[i].FmtValue.CStatus in (PDH_CSTATUS_VALID_DATA, PDH_CSTATUS_NEW_DATA),
                )
                for i in range(count.value)
            ]
        return []

    def adapters(self) -> Sequence[AdapterDesc]:
        try:
            return dxgi_adapters()
        except OSError as exc:
            log.info("DXGI adapter list unavailable: %s", exc)
            return ()

    def close(self) -> None:
        if self._pdh is not None and self._query:
            self._pdh.PdhCloseQuery(self._query)
        self._query = ctypes.c_void_p()
        self._counters = {}
