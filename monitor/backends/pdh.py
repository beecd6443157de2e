"""Windows GPU monitoring through PDH performance counters, computed the way Task Manager does.

Three layers, only the last of which touches Windows:

* pure functions over recorded counter arrays: instance-name parsing, Task-Manager GPU % (per adapter
  LUID, sum over processes per engine, busiest engine, clamp 100), adapter and per-process memory, and
  the LUID → PCI mapping;
* :class:`WindowsPdhBackend`, the monitor backend, which owns the rules about *when* numbers are
  trusted: rate counters need two collections after the query is (re)built, and the query is rebuilt
  after a resume or when an adapter appears or disappears;
* :class:`PdhCtypesReader`, a thin ctypes layer over ``pdh.dll`` (``PdhAddEnglishCounterW`` so counter
  names work in any system language; wildcard instances so new processes show up), DXGI for adapter
  names and sizes, and D3DKMT for each adapter's PCI address. It is the injectable library boundary:
  tests hand the backend a reader that replays recorded counter arrays.

Importing this module never fails on Linux; the Windows DLLs are loaded only when a reader is opened.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gputray.monitor.device_names import friendly_name, known_integrated
from gputray.monitor.records import (
    BackendPoll,
    DeviceInfo,
    DeviceKind,
    DeviceReading,
    ProcessKind,
    ProcessUse,
    Sample,
    Vendor,
)
from gputray.monitor.sysfs import normalize_bdf, pci_key
from gputray.monitor.vulkan import VulkanDevice, format_luid, parse_uuid

log = logging.getLogger(__name__)

# Counter ids → English counter paths (wildcard instances).
ENGINE_UTIL = "engine_util"
ADAPTER_DEDICATED = "adapter_dedicated"
ADAPTER_SHARED = "adapter_shared"
PROCESS_DEDICATED = "process_dedicated"
PROCESS_SHARED = "process_shared"
COUNTER_PATHS: dict[str, str] = {
    ENGINE_UTIL: r"\GPU Engine(*)\Utilization Percentage",
    ADAPTER_DEDICATED: r"\GPU Adapter Memory(*)\Dedicated Usage",
    ADAPTER_SHARED: r"\GPU Adapter Memory(*)\Shared Usage",
    PROCESS_DEDICATED: r"\GPU Process Memory(*)\Dedicated Usage",
    PROCESS_SHARED: r"\GPU Process Memory(*)\Shared Usage",
}
RATE_COUNTERS = frozenset({ENGINE_UTIL})

# PdhAddEnglishCounterW's answer where Windows has no GPU counter set at all: no WDDM 2.x display driver
# (or no GPU), or not Windows but Wine, whose pdh.dll has only a few processor and process counters.
PDH_CSTATUS_NO_OBJECT = 0xC0000BB8
PDH_CSTATUS_NO_COUNTER = 0xC0000BB9
NO_COUNTER_STATUSES = frozenset({PDH_CSTATUS_NO_OBJECT, PDH_CSTATUS_NO_COUNTER})
NO_COUNTERS_RETRY_S = 60.0  # a driver installed meanwhile shows up within a minute
NO_GPU_COUNTERS = (
    "Windows has no GPU performance counters here (no \\GPU Engine counter set): a WDDM 2.0 or later "
    "display driver provides them (Windows 10 1709+); without one, GPU load and memory are unknown"
)

MICROSOFT_VENDOR_ID = 0x1414  # "Microsoft Basic Render Driver": software, not a GPU
_VENDORS: dict[int, Vendor] = {0x10DE: "nvidia", 0x1002: "amd", 0x1022: "amd", 0x8086: "intel"}


# --------------------------------------------------------------------------------------------------
# Instance names


@dataclass(frozen=True)
class PdhInstance:
    """A parsed PDH GPU instance name. ``luid`` is spelled ``0x00000000_0x0000D1B5`` (High_Low)."""

    luid: str
    phys: int
    pid: int | None = None
    eng: int | None = None
    engtype: str | None = None


_INSTANCE_RE = re.compile(
    r"^(?:pid_(?P<pid>\d+)_)?luid_(?P<high>0x[0-9a-fA-F]{1,8})_(?P<low>0x[0-9a-fA-F]{1,8})"
    r"_phys_(?P<phys>\d+)(?:_eng_(?P<eng>\d+)_engtype_(?P<engtype>.*))?$"
)


@functools.lru_cache(maxsize=1 << 14)
def parse_instance(name: str) -> PdhInstance | None:
    """``pid_1234_luid_0x00000000_0x0000D1B5_phys_0_eng_3_engtype_3D`` → its parts; None if malformed.

    The same grammar covers engine instances, per-process memory (``pid_…_luid_…_phys_0``) and adapter
    memory (``luid_…_phys_0``). Cached: the same names come back every poll, and each poll reads the
    engine counters twice (adapter and process utilisation) and the adapter memory counter twice.
    """
    m = _INSTANCE_RE.match(name.strip())
    if m is None:
        return None
    pid = m.group("pid")
    eng = m.group("eng")
    return PdhInstance(
        luid=format_luid(int(m.group("high"), 16), int(m.group("low"), 16)),
        phys=int(m.group("phys")),
        pid=int(pid) if pid is not None else None,
        eng=int(eng) if eng is not None else None,
        engtype=m.group("engtype") if eng is not None else None,
    )


# --------------------------------------------------------------------------------------------------
# Aggregation (Task Manager's rules)


@dataclass(frozen=True)
class CounterItem:
    """One element of ``PdhGetFormattedCounterArrayW``: instance, value, and whether CStatus was valid."""

    instance: str
    value: float
    valid: bool = True


CounterArrays = Mapping[str, Sequence[CounterItem]]


@dataclass(frozen=True)
class EngineLoad:
    eng: int
    engtype: str
    percent: float
    phys: int = 0  # linked adapters (phys_1, ...) have engines of their own under one LUID


@dataclass(frozen=True)
class AdapterUtil:
    """Task-Manager GPU % of one adapter: the busiest engine's summed load, clamped to 100."""

    luid: str
    util_percent: float
    busiest_engtype: str | None
    engines: tuple[EngineLoad, ...]


def _valid_items(items: Iterable[CounterItem]) -> Iterable[tuple[PdhInstance, float]]:
    for item in items:
        if not item.valid or item.value != item.value or item.value < 0:  # invalid, NaN or negative
            continue
        inst = parse_instance(item.instance)
        if inst is not None:
            yield inst, item.value


def adapter_utilization(items: Iterable[CounterItem]) -> dict[str, AdapterUtil]:
    """Per adapter LUID: sum every process's load per engine, take the busiest engine, clamp to 100."""
    per_engine: dict[str, dict[tuple[int, int], float]] = defaultdict(lambda: defaultdict(float))
    engtypes: dict[tuple[str, int, int], str] = {}
    for inst, value in _valid_items(items):
        if inst.eng is None:
            continue
        per_engine[inst.luid][(inst.phys, inst.eng)] += value
        engtypes.setdefault((inst.luid, inst.phys, inst.eng), inst.engtype or "")
    out: dict[str, AdapterUtil] = {}
    for luid, engines in per_engine.items():
        loads = tuple(
            EngineLoad(eng, engtypes[(luid, phys, eng)], min(100.0, total), phys)
            for (phys, eng), total in sorted(engines.items())
        )
        busiest = max(loads, key=lambda e: e.percent)
        out[luid] = AdapterUtil(
            luid=luid,
            util_percent=busiest.percent,
            busiest_engtype=busiest.engtype if busiest.percent > 0 else None,
            engines=loads,
        )
    return out


@dataclass(frozen=True)
class ProcessGpuUse:
    pid: int
    luid: str
    util_percent: float | None = None
    busy_engtypes: tuple[str, ...] = ()
    dedicated_bytes: int | None = None
    shared_bytes: int | None = None


def process_utilization(items: Iterable[CounterItem]) -> dict[tuple[int, str], tuple[float, tuple[str, ...]]]:
    """Per (pid, LUID): the process's busiest engine (Task Manager's per-process GPU column) and the
    engine types it keeps busy."""
    per: dict[tuple[int, str], dict[tuple[int, int], float]] = defaultdict(lambda: defaultdict(float))
    busy: dict[tuple[int, str], set[str]] = defaultdict(set)
    for inst, value in _valid_items(items):
        if inst.pid is None or inst.eng is None:
            continue
        per[(inst.pid, inst.luid)][(inst.phys, inst.eng)] += value
        if value > 0 and inst.engtype:
            busy[(inst.pid, inst.luid)].add(inst.engtype)
    return {
        k: (min(100.0, max(engines.values())), tuple(sorted(busy.get(k, set()))))
        for k, engines in per.items()
    }


def _sum_bytes(items: Iterable[CounterItem], *, per_process: bool) -> dict[Any, int]:
    out: dict[Any, int] = defaultdict(int)
    for inst, value in _valid_items(items):
        if (inst.pid is not None) != per_process:
            continue
        key = (inst.pid, inst.luid) if per_process else inst.luid
        out[key] += int(value)  # linked adapters (phys_1, …) add up under one LUID
    return dict(out)


def adapter_memory(arrays: CounterArrays) -> dict[str, tuple[int | None, int | None]]:
    """LUID → (dedicated bytes used, shared bytes used) from ``\\GPU Adapter Memory(*)``."""
    ded = _sum_bytes(arrays.get(ADAPTER_DEDICATED, ()), per_process=False)
    sha = _sum_bytes(arrays.get(ADAPTER_SHARED, ()), per_process=False)
    return {luid: (ded.get(luid), sha.get(luid)) for luid in sorted(set(ded) | set(sha))}


def process_usage(arrays: CounterArrays, *, rates_valid: bool) -> list[ProcessGpuUse]:
    """Every (pid, adapter) pair with memory on it or load on it, from engine and process-memory counters."""
    ded = _sum_bytes(arrays.get(PROCESS_DEDICATED, ()), per_process=True)
    sha = _sum_bytes(arrays.get(PROCESS_SHARED, ()), per_process=True)
    util = process_utilization(arrays.get(ENGINE_UTIL, ())) if rates_valid else {}
    out: list[ProcessGpuUse] = []
    for pid, luid in sorted(set(ded) | set(sha) | set(util)):
        d, s = ded.get((pid, luid)), sha.get((pid, luid))
        u = util.get((pid, luid))
        if not d and not s and (u is None or u[0] <= 0):
            continue  # a process that merely opened the adapter
        out.append(
            ProcessGpuUse(
                pid=pid,
                luid=luid,
                util_percent=u[0] if u is not None else None,
                busy_engtypes=u[1] if u is not None else (),
                dedicated_bytes=d,
                shared_bytes=s,
            )
        )
    return out


def process_kind(engtypes: Sequence[str]) -> ProcessKind:
    lowered = [e.lower() for e in engtypes]
    compute = any(e.startswith(("compute", "cuda")) for e in lowered)
    graphics = any(e.startswith(("3d", "graphics", "high priority 3d")) for e in lowered)
    if compute and graphics:
        return "mixed"
    if compute:
        return "compute"
    if graphics:
        return "graphics"
    return "other"


# --------------------------------------------------------------------------------------------------
# LUID → PCI address


@dataclass(frozen=True)
class AdapterDesc:
    """An adapter as DXGI describes it, plus its PCI address when D3DKMT could tell."""

    luid: str
    name: str
    vendor_id: int | None = None
    device_id: int | None = None
    revision: int | None = None
    dedicated_video_bytes: int | None = None
    shared_system_bytes: int | None = None
    pci_bdf: str | None = None
    software: bool = False


def _name_tokens(name: str) -> set[str]:
    drop = {"nvidia", "amd", "ati", "intel", "(r)", "(tm)", "graphics", "geforce", "radeon", "corporation"}
    return {t for t in re.split(r"[^0-9a-z]+", name.lower()) if t and t not in drop}


def _size_close(a: int | None, b: int | None, tolerance: float = 0.1) -> bool:
    return a is not None and b is not None and a > 0 and b > 0 and abs(a - b) <= tolerance * max(a, b)


def luid_key(luid: str) -> str:
    """The device key of an adapter whose PCI address is unknown."""
    return f"luid:{luid}"


def map_luids(
    adapters: Sequence[AdapterDesc],
    candidates: Sequence[DeviceInfo] = (),
    vulkan: Sequence[VulkanDevice] = (),
) -> dict[str, str]:
    """Adapter LUID → device key, so one GPU shows once whether NVML, sysfs or PDH reports it.

    In order of trust: the PCI address D3DKMT reported; a Vulkan device with the same LUID and a PCI
    address (or an NVML UUID); a unique PCI vendor:device id among the candidates; the name and memory
    size. Unmatched adapters get ``luid:…`` keys. Each candidate is used at most once.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    by_luid = {v.luid: v for v in vulkan if v.luid is not None}
    pending: list[AdapterDesc] = []
    for ad in adapters:
        key: str | None = None
        if ad.pci_bdf is not None and normalize_bdf(ad.pci_bdf) is not None:
            key = pci_key(ad.pci_bdf)
        elif (vk := by_luid.get(ad.luid)) is not None:
            vk_uuid = parse_uuid(vk.uuid) if vk.uuid else None
            uuid_hit = next(
                (c.key for c in candidates if vk_uuid and c.uuid and parse_uuid(c.uuid) == vk_uuid), None
            )
            if uuid_hit is not None:
                key = uuid_hit
            elif vk.pci_bdf is not None:
                key = pci_key(vk.pci_bdf)
        if key is None:
            pending.append(ad)
            continue
        out[ad.luid] = key
        taken.add(key)
    for ad in pending:
        free = [c for c in candidates if c.key not in taken and c.kind != "cpu"]
        same_ids = [
            c
            for c in free
            if ad.vendor_id is not None
            and c.pci_vendor_id == ad.vendor_id
            and c.pci_device_id == ad.device_id
        ]
        pick: DeviceInfo | None = same_ids[0] if len(same_ids) == 1 else None
        if pick is None:
            pool = same_ids or free
            tokens = _name_tokens(ad.name)
            scored = [
                (
                    len(tokens & _name_tokens(c.name)),
                    _size_close(ad.dedicated_video_bytes, c.vram_total_bytes),
                    c,
                )
                for c in pool
            ]
            good = [s for s in scored if s[0] > 0 and (s[1] or not any(x[1] for x in scored))]
            good.sort(key=lambda s: (s[1], s[0]), reverse=True)
            if good and (len(good) == 1 or good[0][:2] != good[1][:2]):
                pick = good[0][2]
        if pick is not None:
            out[ad.luid] = pick.key
            taken.add(pick.key)
        else:
            out[ad.luid] = luid_key(ad.luid)
    return out


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

        return str(psutil.Process(pid).name())
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
        self._error: str | None = None
        self._retry_at_s: float | None = None
        # Why the poll has no GPU at all (the monitor shows it as a note); None while PDH reads.
        self.unavailable_reason: str | None = None

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
            self._error = NO_GPU_COUNTERS if no_counters else f"PDH counters unavailable: {exc}"
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
                        reason=None if rates_valid else "GPU % needs a second PDH collection",
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
