"""Windows GPU monitoring through PDH performance counters, computed the way Task Manager does.

Three layers, only the last of which touches Windows:

* ``pdh_counters.py``, pure functions over recorded counter arrays: instance-name parsing,
  Task-Manager GPU % (per adapter LUID, sum over processes per engine, busiest engine, clamp 100),
  adapter and per-process memory, and the LUID → PCI mapping;
* :class:`WindowsPdhBackend` (this module), the monitor backend, which owns the rules about *when*
  numbers are trusted: rate counters need two collections after the query is (re)built, and the query
  is rebuilt after a resume or when an adapter appears or disappears;
* ``pdh_ctypes.py``'s :class:`PdhCtypesReader`, a thin ctypes layer over ``pdh.dll``
  (``PdhAddEnglishCounterW`` so counter names work in any system language; wildcard instances so new
  processes show up), DXGI for adapter names and sizes, and D3DKMT for each adapter's PCI address. It
  is the injectable library boundary:
  tests hand the backend a reader that replays recorded counter arrays.

Importing this module never fails on Linux; the Windows DLLs are loaded only when a reader is opened.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from gputray.monitor import busy_why as why
from gputray.monitor import proc_name
from gputray.monitor.backends.pdh_counters import (
    ADAPTER_DEDICATED,
    ENGINE_UTIL,
    AdapterDesc,
    AdapterUtil,
    CounterArrays,
    adapter_memory,
    adapter_utilization,
    luid_key,
    map_luids,
    parse_instance,
    process_kind,
    process_usage,
)
from gputray.monitor.backends.pdh_ctypes import PdhCtypesReader, PdhError
from gputray.monitor.device_names import friendly_name, known_integrated
from gputray.monitor.records import (
    BackendPoll,
    DeviceInfo,
    DeviceKind,
    DeviceReading,
    ProcessUse,
    Sample,
    Vendor,
)
from gputray.monitor.vulkan import VulkanDevice

log = logging.getLogger(__name__)


# PdhAddEnglishCounterW's answer where Windows has no GPU counter set at all: no WDDM 2.x display driver
# (or no GPU), or not Windows but Wine, whose pdh.dll has only a few processor and process counters.
PDH_CSTATUS_NO_OBJECT = 0xC0000BB8
PDH_CSTATUS_NO_COUNTER = 0xC0000BB9
NO_COUNTER_STATUSES = frozenset({PDH_CSTATUS_NO_OBJECT, PDH_CSTATUS_NO_COUNTER})
NO_COUNTERS_RETRY_S = 60.0  # a driver installed meanwhile shows up within a minute
NO_GPU_COUNTERS = why.NoGpuCounters()

MICROSOFT_VENDOR_ID = 0x1414  # "Microsoft Basic Render Driver": software, not a GPU
_VENDORS: dict[int, Vendor] = {0x10DE: "nvidia", 0x1002: "amd", 0x1022: "amd", 0x8086: "intel"}


# --------------------------------------------------------------------------------------------------
# The backend


class PdhReader(Protocol):
    """The library boundary: the real one wraps pdh.dll/DXGI/D3DKMT, tests replay recordings."""

    def open(self) -> None:
        """(Re)build the query with every counter of :data:`COUNTER_PATHS`."""

    def collect(self) -> CounterArrays:
        """``PdhCollectQueryData`` then every counter's formatted array. Raises OSError on failure."""

    def adapters(self) -> Sequence[AdapterDesc]:
        """The display adapters present now (DXGI + D3DKMT)."""

    def close(self) -> None: ...


def _default_process_name(pid: int) -> str:
    try:
        import psutil

        return proc_name.process_name(psutil.Process(pid))
    except Exception:
        return f"pid {pid}"


def _kind_for(ad: AdapterDesc | None, vendor: Vendor) -> DeviceKind:
    if ad is not None and ad.vendor_id is not None and ad.device_id is not None:
        known = known_integrated(ad.vendor_id, ad.device_id)
        if known is not None:
            return "integrated" if known else "discrete"
    if vendor == "intel":
        return "integrated"
    if vendor == "amd" and ad is not None and ad.dedicated_video_bytes is not None:
        # APUs show their UMA carve-out (512 MiB - 4 GiB, sometimes 8) as "dedicated".
        shared = ad.shared_system_bytes or 0
        return (
            "integrated"
            if ad.dedicated_video_bytes <= 8 * 2**30 and shared >= ad.dedicated_video_bytes
            else "discrete"
        )
    return "discrete" if vendor == "nvidia" else "other"


class WindowsPdhBackend:
    """Monitor backend for Windows: GPU %, dedicated and shared memory per adapter and per process.

    NVML (nvml.dll) still supplies the 5060 Ti's temperature, power and clocks; the monitor merges the
    two by device key, which is why every adapter is mapped to its PCI address here.
    """

    name = "pdh"

    def __init__(
        self,
        reader: PdhReader | None = None,
        *,
        candidates: Callable[[], Sequence[DeviceInfo]] | None = None,
        vulkan: Callable[[], Sequence[VulkanDevice]] | None = None,
        process_name: Callable[[int], str] = _default_process_name,
        resume_gap_s: float = 30.0,
    ) -> None:
        self._reader = reader
        self._candidates = candidates or (lambda: ())
        self._vulkan = vulkan if vulkan is not None else _default_vulkan
        self._process_name = process_name
        self._resume_gap_s = resume_gap_s
        self._open = False
        self._collections = 0
        self._adapters: dict[str, AdapterDesc] = {}
        self._keys: dict[str, str] = {}
        self._seen_luids: frozenset[str] | None = None
        self._last_poll_s: float | None = None
        self._names: dict[int, str] = {}
        self.rebuilds = 0
        self.last_rebuild_reason: str | None = None
        self._error: why.SampleWhy | None = None
        self._retry_at_s: float | None = None
        # Why the poll has no GPU at all (the monitor shows it as a note); None while PDH reads.
        self.unavailable_reason: why.SampleWhy | None = None

    # -- query lifecycle ------------------------------------------------------------------------

    def _reader_or_default(self) -> PdhReader:
        if self._reader is None:
            self._reader = PdhCtypesReader()
        return self._reader

    def _rebuild(self, reason: str) -> None:
        reader = self._reader_or_default()
        if self._open:
            with contextlib.suppress(OSError):
                reader.close()
        reader.open()
        self._open = True
        self._collections = 0
        self._seen_luids = None
        self.rebuilds += 1
        self.last_rebuild_reason = reason
        adapters = [a for a in reader.adapters() if not a.software and a.vendor_id != MICROSOFT_VENDOR_ID]
        self._adapters = {a.luid: a for a in adapters}
        vulkan: Sequence[VulkanDevice] = ()
        if any(a.pci_bdf is None for a in adapters):
            try:
                vulkan = self._vulkan()
            except Exception as exc:
                log.debug("Vulkan LUID lookup failed: %s", exc)
        self._keys = map_luids(adapters, self._candidates(), vulkan)
        log.info("PDH query built (%s)", reason)

    def _collect(self, now_s: float) -> CounterArrays:
        if not self._open:
            self._rebuild("first poll")
        elif self._last_poll_s is not None and now_s - self._last_poll_s > self._resume_gap_s:
            self._rebuild(f"no poll for {now_s - self._last_poll_s:.0f} s (resume from sleep?)")
        arrays = self._reader_or_default().collect()
        self._collections += 1
        luids = frozenset(_adapter_luids(arrays))
        if self._seen_luids is not None and luids != self._seen_luids:
            came = sorted(luids - self._seen_luids)
            went = sorted(self._seen_luids - luids)
            self._rebuild(f"adapters changed (appeared: {came or '-'}, vanished: {went or '-'})")
            arrays = self._reader_or_default().collect()
            self._collections += 1
            luids = frozenset(_adapter_luids(arrays))
        self._seen_luids = luids
        return arrays

    # -- Backend protocol ----------------------------------------------------------------------

    def poll(self, now_s: float) -> BackendPoll:
        if self._retry_at_s is not None and now_s < self._retry_at_s:
            return self._unavailable(now_s)
        try:
            arrays = self._collect(now_s)
        except Exception as exc:
            no_counters = isinstance(exc, PdhError) and exc.status in NO_COUNTER_STATUSES
            self._error = NO_GPU_COUNTERS if no_counters else why.CountersFailed(error=str(exc))
            self._retry_at_s = now_s + NO_COUNTERS_RETRY_S if no_counters else None
            self._open = False  # rebuild on the next poll
            self._last_poll_s = now_s
            return self._unavailable(now_s)
        self._error = None
        self._retry_at_s = None
        self.unavailable_reason = None
        self._last_poll_s = now_s
        rates_valid = self._collections >= 2
        util = adapter_utilization(arrays.get(ENGINE_UTIL, ())) if rates_valid else {}
        memory = adapter_memory(arrays)
        luids = sorted(
            (set(memory) | set(util) | set(self._adapters))
            - {luid for luid, a in self._adapters.items() if a.software}
        )
        readings: list[DeviceReading] = []
        for luid in luids:
            if luid not in self._adapters and luid not in memory:
                continue
            info = self._info(luid)
            ded, sha = memory.get(luid, (None, None))
            au = util.get(luid)
            readings.append(
                DeviceReading(
                    info,
                    Sample(
                        key=info.key,
                        timestamp_s=now_s,
                        reason=None if rates_valid else why.NeedsSecondCollection(),
                        util_percent=au.util_percent if au is not None else (0.0 if rates_valid else None),
                        vram_used_bytes=ded,
                        vram_total_bytes=info.vram_total_bytes,
                        shared_used_bytes=sha,
                        shared_total_bytes=info.shared_total_bytes,
                        encoder_percent=_video_load(au, "encode"),
                        decoder_percent=_video_load(au, "decode"),
                    ),
                )
            )
        keys = {r.info.windows_luid: r.info.key for r in readings}
        processes = tuple(
            ProcessUse(
                pid=p.pid,
                name=self._name(p.pid),
                device=keys[p.luid],
                kind=process_kind(p.busy_engtypes),
                vram_bytes=p.dedicated_bytes,
                shared_bytes=p.shared_bytes,
                util_percent=p.util_percent,
            )
            for p in process_usage(arrays, rates_valid=rates_valid)
            if p.luid in keys
        )
        return BackendPoll(readings=tuple(readings), processes=processes)

    def close(self) -> None:
        if self._open and self._reader is not None:
            with contextlib.suppress(OSError):
                self._reader.close()
        self._open = False

    # -- helpers --------------------------------------------------------------------------------

    def _name(self, pid: int) -> str:
        name = self._names.get(pid)
        if name is None:
            name = self._process_name(pid)
            if len(self._names) > 4096:
                self._names.clear()
            self._names[pid] = name
        return name

    def _info(self, luid: str) -> DeviceInfo:
        ad = self._adapters.get(luid)
        key = self._keys.get(luid, luid_key(luid))
        known = next((c for c in self._candidates() if c.key == key), None)
        vendor: Vendor = _VENDORS.get(ad.vendor_id or 0, "other") if ad is not None else "other"
        if known is not None:
            name, vendor, kind = known.name, known.vendor, known.kind
        elif ad is not None and ad.vendor_id is not None and ad.device_id is not None:
            name = friendly_name(ad.vendor_id, ad.device_id, revision=ad.revision, fallback=ad.name)
            kind = _kind_for(ad, vendor)
        else:
            name, kind = (ad.name if ad is not None else f"GPU {luid}"), _kind_for(ad, vendor)
        bdf = key.removeprefix("pci:") if key.startswith("pci:") else None
        return DeviceInfo(
            key=key,
            name=name,
            vendor=vendor,
            kind=kind,
            backend=self.name,
            pci_bdf=bdf,
            vram_total_bytes=ad.dedicated_video_bytes if ad is not None else None,
            shared_total_bytes=ad.shared_system_bytes if ad is not None else None,
            pci_vendor_id=ad.vendor_id if ad is not None else None,
            pci_device_id=ad.device_id if ad is not None else None,
            windows_luid=luid,
        )

    def _unavailable(self, now_s: float) -> BackendPoll:
        readings = []
        for luid in sorted(self._adapters):
            info = self._info(luid)
            readings.append(
                DeviceReading(
                    info, Sample(key=info.key, timestamp_s=now_s, state="unavailable", reason=self._error)
                )
            )
        self.unavailable_reason = None if readings else self._error
        return BackendPoll(readings=tuple(readings))


def _video_load(util: AdapterUtil | None, word: str) -> float | None:
    """Task Manager's "Video Encode"/"Video Decode": the busiest engine whose type names it
    (``VideoEncode``, ``VideoDecode``; ``Video Codec`` engines do both and count for neither); None
    where the adapter has no such engine."""
    if util is None:
        return None
    loads = [e.percent for e in util.engines if word in e.engtype.lower()]
    return max(loads) if loads else None


def _adapter_luids(arrays: CounterArrays) -> Iterable[str]:
    for item in arrays.get(ADAPTER_DEDICATED, ()):
        inst = parse_instance(item.instance)
        if inst is not None and inst.pid is None:
            yield inst.luid


def _default_vulkan() -> Sequence[VulkanDevice]:
    from gputray.monitor.vulkan import enumerate_devices

    return enumerate_devices().devices
