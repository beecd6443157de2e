"""One GPU, one identity: map Vulkan indices, ROCm indices and DRM nodes to monitor device keys.

Vulkan devices are matched to the monitor's devices (keyed by PCI address, ``pci:0000:64:00.0``):

* NVIDIA by UUID — NVML's ``GPU-…`` UUID is the same 16 bytes as Vulkan's ``deviceUUID``;
* anyone exposing ``VK_EXT_pci_bus_info`` (RADV, AMDVLK, NVIDIA, ANV) by PCI address;
* RADV without the extension by its ``deviceUUID``, which is just the packed PCI address
  (four little-endian u32: domain, bus, device, function — Mesa's ``ac_compute_device_uuid``);
* as a last resort by PCI vendor:device id when exactly one known GPU has it;
* a simulated GPU that a demo scenario backs with a real Vulkan device (``[[vulkan]]``,
  ``DeviceInfo.vulkan_name``) by that device's name: two lavapipe devices behind the demo pair.

Software renderers (llvmpipe/lavapipe) and a second driver for the same GPU (AMDVLK next to RADV)
are listed and marked rather than silently dropped: a user reading ``gputray devices`` must see why
``GGML_VK_VISIBLE_DEVICES=2`` is not a GPU.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gputray.monitor import vulkan_why as w
from gputray.monitor.records import DeviceInfo
from gputray.monitor.sysfs import normalize_bdf, pci_key, read_int, read_str
from gputray.monitor.vulkan import (
    AMD_VENDOR_ID,
    VulkanDevice,
    VulkanEnumeration,
    enumerate_devices,
    parse_uuid,
)

MapMethod = Literal["uuid", "pci-bus-info", "radv-uuid", "pci-id", "name"]
MapStatus = Literal["mapped", "duplicate", "unmapped"]

RADV_DRIVER_ID = 3


@dataclass(frozen=True)
class VulkanMapping:
    """Where one Vulkan device lands. ``key`` is set for ``mapped`` and ``duplicate``; ``note`` says why,
    as a code (``vulkan_why``) the scheduler's reason catalogues word."""

    device: VulkanDevice
    key: str | None
    status: MapStatus
    method: MapMethod | None = None
    note: w.MappingWhy | None = None


def radv_uuid_bdf(uuid: str | None) -> str | None:
    """Decode RADV's ``deviceUUID`` (packed PCI address) into ``0000:64:00.0``; None if it is not one."""
    raw = parse_uuid(uuid) if uuid else None
    if raw is None:
        return None
    domain, bus, dev, func = (int.from_bytes(raw[i : i + 4], "little") for i in range(0, 16, 4))
    if domain > 0xFFFF or bus > 0xFF or dev > 0x1F or func > 0x7:
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{func}"


def _is_radv(dev: VulkanDevice) -> bool:
    return dev.driver_id == RADV_DRIVER_ID or "radv" in (dev.driver_name or "").lower()


def _match(dev: VulkanDevice, known: Sequence[DeviceInfo]) -> tuple[str, MapMethod] | None:
    dev_uuid = parse_uuid(dev.uuid) if dev.uuid else None
    if dev_uuid is not None:
        for info in known:
            if info.uuid and parse_uuid(info.uuid) == dev_uuid:
                return info.key, "uuid"
    if dev.pci_bdf is not None and normalize_bdf(dev.pci_bdf) is not None:
        return pci_key(dev.pci_bdf), "pci-bus-info"
    if dev.vendor_id == AMD_VENDOR_ID and _is_radv(dev):
        bdf = radv_uuid_bdf(dev.uuid)
        if bdf is not None:
            return pci_key(bdf), "radv-uuid"
    same_ids = [
        info
        for info in known
        if info.pci_vendor_id == dev.vendor_id and info.pci_device_id == dev.device_id and info.kind != "cpu"
    ]
    if len(same_ids) == 1:
        return same_ids[0].key, "pci-id"
    return None


def map_vulkan_devices(
    devices: Sequence[VulkanDevice], known: Sequence[DeviceInfo] = ()
) -> tuple[VulkanMapping, ...]:
    """Map every Vulkan device (in enumeration order) to a device key, or say why it can't be."""
    out: list[VulkanMapping] = []
    first_for_key: dict[str, VulkanDevice] = {}
    backed = [info for info in known if info.vulkan_name]  # simulated GPUs a demo scenario backs
    for dev in sorted(devices, key=lambda d: d.index):
        by_name = next((i for i in backed if dev.name.startswith(str(i.vulkan_name))), None)
        if by_name is not None and by_name.key not in first_for_key:
            first_for_key[by_name.key] = dev
            out.append(
                VulkanMapping(dev, by_name.key, "mapped", "name", w.BacksSimulated(device=by_name.name))
            )
            continue
        if dev.device_type == "cpu":
            out.append(VulkanMapping(dev, None, "unmapped", note=w.SoftwareRenderer()))
            continue
        found = _match(dev, known)
        if found is None:
            out.append(VulkanMapping(dev, None, "unmapped", note=w.NoMatch(no_gpus=not known)))
            continue
        key, method = found
        first = first_for_key.get(key)
        if first is not None:
            note = w.SecondDriver(
                first_index=first.index,
                first_driver=first.driver_name or first.name,
                driver=dev.driver_name or dev.name,
            )
            out.append(VulkanMapping(dev, key, "duplicate", method, note))
            continue
        first_for_key[key] = dev
        out.append(VulkanMapping(dev, key, "mapped", method))
    return tuple(out)


def indices_by_key(mappings: Sequence[VulkanMapping]) -> dict[str, int]:
    """Device key → the Vulkan index a job should use (the first driver exposing that GPU)."""
    return {m.key: m.device.index for m in mappings if m.status == "mapped" and m.key is not None}


# --------------------------------------------------------------------------------------------------
# The scheduler's helper, with a small cache keyed on the parts of the environment that matter.

# Variables that change what the Vulkan loader sees, or in which order: loader and driver lists, Mesa's
# device-select layer (which falls back to the display server's GPU), driver switches, library paths.
_ENV_PREFIXES = (
    "VK_",
    "MESA_",
    "DRI_",
    "RADV_",
    "AMD_VULKAN",
    "NODEVICE_SELECT",
    "DISABLE_",
    "ENABLE_",
    "__NV",
    "__VK",
    "LD_",
    "LP_",
    "GPUTRAY_VULKAN",
    "DISPLAY",
    "WAYLAND_",
    "XDG_RUNTIME_DIR",
    "PATH",
)
CACHE_TTL_S = 30.0
CACHE_MAX_ENTRIES = 16

Enumerator = Callable[[Mapping[str, str]], VulkanEnumeration]
_CacheKey = tuple[tuple[str, str], ...]

_cache: dict[_CacheKey, tuple[float, VulkanEnumeration]] = {}
_cache_lock = threading.Lock()


def env_cache_key(env: Mapping[str, str]) -> _CacheKey:
    return tuple(sorted((k, v) for k, v in env.items() if k.upper().startswith(_ENV_PREFIXES)))


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def cached_enumeration(
    env: Mapping[str, str] | None = None,
    *,
    enumerate_fn: Enumerator = enumerate_devices,
    clock: Callable[[], float] = time.monotonic,
    ttl_s: float = CACHE_TTL_S,
) -> VulkanEnumeration:
    """Enumerate in ``env`` (default: ours), reusing a result younger than ``ttl_s`` for the same env."""
    job_env = dict(os.environ if env is None else env)
    key = env_cache_key(job_env)
    now = clock()
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and now - hit[0] < ttl_s:
            return hit[1]
    enum = enumerate_fn(job_env)
    with _cache_lock:
        if len(_cache) >= CACHE_MAX_ENTRIES:
            _cache.pop(min(_cache, key=lambda k: _cache[k][0]))
        _cache[key] = (now, enum)
    return enum


def vulkan_index_for(
    device_key: str,
    env: Mapping[str, str] | None = None,
    known_devices: Sequence[DeviceInfo] = (),
    *,
    enumerate_fn: Enumerator = enumerate_devices,
    clock: Callable[[], float] = time.monotonic,
) -> int | None:
    """The ``vkEnumeratePhysicalDevices`` index of ``device_key`` for a job started with ``env``.

    This is what ``{vk_index}`` and ``GGML_VK_VISIBLE_DEVICES`` need. None when Vulkan is not available
    or no Vulkan device maps to that key.
    """
    enum = cached_enumeration(env, enumerate_fn=enumerate_fn, clock=clock)
    return indices_by_key(map_vulkan_devices(enum.devices, known_devices)).get(device_key)


def adapter_name_for(
    device_key: str,
    env: Mapping[str, str] | None = None,
    known_devices: Sequence[DeviceInfo] = (),
    *,
    enumerate_fn: Enumerator = enumerate_devices,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """The Vulkan device name of ``device_key`` as a job started with ``env`` sees it, for wgpu's
    adapter-name variables (``WGPU_ADAPTER_NAME``, ``WGPUPY_WGPU_ADAPTER_NAME``), which pick the first
    adapter whose name *contains* the value: None when another Vulkan device's name contains it too
    (case aside; two cards of one model, one GPU through two drivers), so no job is sent to the wrong one.
    """
    enum = cached_enumeration(env, enumerate_fn=enumerate_fn, clock=clock)
    index = indices_by_key(map_vulkan_devices(enum.devices, known_devices)).get(device_key)
    chosen = next((d for d in enum.devices if d.index == index), None)
    if chosen is None or not chosen.name:
        return None
    name = chosen.name.lower()
    if any(name in d.name.lower() for d in enum.devices if d.index != chosen.index):
        return None
    return chosen.name


# --------------------------------------------------------------------------------------------------
# ROCm (KFD topology) and DRM nodes from sysfs.


@dataclass(frozen=True)
class KfdGpu:
    """A GPU node of the KFD topology. ``rocm_index`` is its position among GPU nodes (ROCr's order)."""

    rocm_index: int
    node: int
    key: str
    pci_bdf: str
    gfx_target: str | None
    simd_count: int
    render_node: str | None
    pci_vendor_id: int | None
    pci_device_id: int | None
    compute_units: int | None = None
    integrated: bool | None = None  # an APU: no local memory of its own (KFD local_mem_size 0)


def _sys_dir(sysfs_root: Path, *candidates: str) -> Path | None:
    for rel in candidates:
        path = sysfs_root / rel
        if path.is_dir():
            return path
    return None


def kfd_nodes_dir(sysfs_root: Path) -> Path | None:
    """``/sys/class/kfd/kfd/topology/nodes``; also accepts captured trees that start at ``kfd/``."""
    return _sys_dir(sysfs_root, "class/kfd/kfd/topology/nodes", "kfd/topology/nodes")


def _properties(path: Path) -> dict[str, int]:
    text = read_str(path) or ""
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                props[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return props


def gfx_target_name(version: int) -> str | None:
    """KFD ``gfx_target_version`` 110003 → ``gfx1103``; 90010 → ``gfx90a``."""
    if version <= 0:
        return None
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def kfd_gpus(sysfs_root: Path = Path("/sys")) -> tuple[KfdGpu, ...]:
    """GPU nodes of the KFD topology in ROCr/HIP order (node number order; CPU nodes skipped)."""
    nodes_dir = kfd_nodes_dir(sysfs_root)
    if nodes_dir is None:
        return ()
    try:
        nodes = sorted(int(p.name) for p in nodes_dir.iterdir() if p.name.isdigit())
    except OSError:
        return ()
    gpus: list[KfdGpu] = []
    for node in nodes:
        props = _properties(nodes_dir / str(node) / "properties")
        gpu_id = read_int(nodes_dir / str(node) / "gpu_id")
        if props.get("simd_count", 0) <= 0 or not gpu_id:
            continue
        loc = props.get("location_id", 0)
        bdf = f"{props.get('domain', 0):04x}:{(loc >> 8) & 0xFF:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 0x7}"
        minor = props.get("drm_render_minor", 0)
        gpus.append(
            KfdGpu(
                rocm_index=len(gpus),
                node=node,
                key=pci_key(bdf),
                pci_bdf=bdf,
                gfx_target=gfx_target_name(props.get("gfx_target_version", 0)),
                simd_count=props.get("simd_count", 0),
                render_node=f"renderD{minor}" if minor >= 128 else None,
                pci_vendor_id=props.get("vendor_id") or None,
                pci_device_id=props.get("device_id") or None,
                compute_units=(
                    props["simd_count"] // props["simd_per_cu"] if props.get("simd_per_cu", 0) > 0 else None
                ),
                integrated=props["local_mem_size"] == 0 if "local_mem_size" in props else None,
            )
        )
    return tuple(gpus)


def rocm_indices(sysfs_root: Path = Path("/sys")) -> dict[str, int]:
    """Device key → ROCR/HIP index (before any ``ROCR_VISIBLE_DEVICES`` filtering)."""
    return {gpu.key: gpu.rocm_index for gpu in kfd_gpus(sysfs_root)}


@dataclass(frozen=True)
class DrmNodes:
    card: str | None = None
    render_node: str | None = None


_DRM_NAME = re.compile(r"^(card\d+|renderD\d+)$")


def drm_nodes(sysfs_root: Path = Path("/sys")) -> dict[str, DrmNodes]:
    """Device key → its DRM card and render node, from ``class/drm/*/device/uevent``.

    Render nodes missing from sysfs are filled in from KFD's ``drm_render_minor``.
    """
    found: dict[str, DrmNodes] = {}
    drm_dir = _sys_dir(sysfs_root, "class/drm", ".")
    entries: list[Path] = []
    if drm_dir is not None:
        try:
            entries = sorted(p for p in drm_dir.iterdir() if _DRM_NAME.match(p.name))
        except OSError:
            entries = []
    for entry in entries:
        slot = None
        for line in (read_str(entry / "device" / "uevent") or "").splitlines():
            if line.startswith("PCI_SLOT_NAME="):
                slot = normalize_bdf(line.split("=", 1)[1])
        if slot is None:
            continue
        key = pci_key(slot)
        cur = found.get(key, DrmNodes())
        if entry.name.startswith("card") and cur.card is None:
            cur = DrmNodes(entry.name, cur.render_node)
        elif entry.name.startswith("renderD") and cur.render_node is None:
            cur = DrmNodes(cur.card, entry.name)
        found[key] = cur
    for gpu in kfd_gpus(sysfs_root):
        cur = found.get(gpu.key, DrmNodes())
        if cur.render_node is None and gpu.render_node is not None:
            found[gpu.key] = DrmNodes(cur.card, gpu.render_node)
    return found
