"""PDH's GPU counters as plain data, the part of the Windows backend that runs anywhere: the counter
paths, instance-name parsing, Task Manager's GPU % (per adapter LUID, sum over processes per engine,
busiest engine, clamp 100), adapter and per-process memory, and the LUID → PCI mapping. Pure functions
over recorded counter arrays; moved out of ``pdh.py`` whole (``pdh.py``'s docstring: the three layers).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputray.monitor.records import (
    DeviceInfo,
    ProcessKind,
)
from gputray.monitor.sysfs import normalize_bdf, pci_key
from gputray.monitor.vulkan import VulkanDevice, format_luid, parse_uuid

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
