"""Vulkan physical devices as the Vulkan loader itself enumerates them, read through ctypes (no SDK).

Two layers: ``vulkan_loader.py``'s :func:`enumerate_in_process` (over the ctypes layouts of
``vulkan_layouts.py``) talks to ``libvulkan.so.1`` / ``vulkan-1.dll`` directly and is
only ever called inside the ``gputray.monitor.vulkan_enum`` worker process, because a broken ICD can
crash or hang whoever loads it; :func:`enumerate_devices` runs that worker with a job's environment
(Mesa's device-select layer, ``MESA_VK_DEVICE_SELECT`` and ``DRI_PRIME`` reorder devices, so an index
is only meaningful for the environment it was computed in) and a timeout, and never raises. This
module holds the records both sides share and the JSON between them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import IO, Any, Literal

import msgspec

from gputray.monitor import vulkan_why as w
from gputray.monitor.interpreter import module_command
from gputray.monitor.process_group import kill_group, popen_own_group

VulkanDeviceType = Literal["integrated", "discrete", "virtual", "cpu", "other"]

LOADER_ENV = "GPUTRAY_VULKAN_LOADER"
"""Environment variable naming the Vulkan loader library to use instead of the system one."""

WORKER_MODULE = "gputray.monitor.vulkan_enum"

NVIDIA_VENDOR_ID = 0x10DE
AMD_VENDOR_ID = 0x1002
INTEL_VENDOR_ID = 0x8086

DEVICE_TYPES: dict[int, VulkanDeviceType] = {
    0: "other",
    1: "integrated",
    2: "discrete",
    3: "virtual",
    4: "cpu",
}
# VkDriverId values worth naming when the driver leaves driverName empty.
DRIVER_IDS: dict[int, str] = {
    1: "amdvlk",
    2: "amd-proprietary",
    3: "radv",
    4: "nvidia",
    5: "intel-proprietary",
    6: "anv",
    10: "llvmpipe",
    13: "lavapipe",
    14: "moltenvk",
    24: "nvk",
}


@dataclass(frozen=True)
class VulkanDevice:
    """One entry of ``vkEnumeratePhysicalDevices``; ``index`` is its position in that order.

    ``uuid`` is ``deviceUUID`` as lower-case 8-4-4-4-12 hex; for NVIDIA it equals NVML's and CUDA's
    UUID without the ``GPU-`` prefix (see :attr:`nvidia_uuid`). ``luid`` is the Windows adapter LUID
    (``0x00000000_0x0000D1B5``, as PDH spells it) when the driver reports a valid one.
    """

    index: int
    name: str
    device_type: VulkanDeviceType
    vendor_id: int
    device_id: int
    uuid: str | None = None
    driver_name: str | None = None
    pci_bdf: str | None = None
    driver_id: int | None = None
    driver_info: str | None = None
    api_version: str | None = None
    luid: str | None = None

    @property
    def nvidia_uuid(self) -> str | None:
        """The UUID spelled like NVML / ``nvidia-smi -L`` / ``CUDA_VISIBLE_DEVICES``: ``GPU-xxxxxxxx-…``."""
        return None if self.uuid is None else f"GPU-{self.uuid}"


@dataclass(frozen=True)
class VulkanEnumeration:
    """What one enumeration found. ``why``: why Vulkan is not available (then no devices), as a code
    (``vulkan_why``) the scheduler's reason catalogues word."""

    devices: tuple[VulkanDevice, ...] = ()
    why: w.VulkanWhy | None = None
    instance_version: str | None = None

    @property
    def available(self) -> bool:
        return self.why is None


def format_uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def parse_uuid(text: str) -> bytes | None:
    """``GPU-6d657361-…``, ``6d657361-…`` or 32 bare hex digits → 16 bytes; None if not a UUID."""
    t = text.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if t.startswith(prefix):
            t = t[len(prefix) :]
    t = t.replace("-", "")
    if len(t) != 32:
        return None
    try:
        return bytes.fromhex(t)
    except ValueError:
        return None


def format_luid(high: int, low: int) -> str:
    """A Windows LUID as PDH instance names spell it: ``0x00000000_0x0000D1B5`` (HighPart, LowPart)."""
    return f"0x{high & 0xFFFFFFFF:08X}_0x{low & 0xFFFFFFFF:08X}"


def version_string(packed: int) -> str:
    """A ``VK_MAKE_API_VERSION`` value as ``1.3.239``."""
    return f"{(packed >> 22) & 0x7F}.{(packed >> 12) & 0x3FF}.{packed & 0xFFF}"


# --------------------------------------------------------------------------------------------------
# JSON wire format between the worker and the parent.


def to_json(enum: VulkanEnumeration) -> dict[str, Any]:
    return {
        "why": None if enum.why is None else msgspec.to_builtins(enum.why),
        "instance_version": enum.instance_version,
        "devices": [asdict(d) for d in enum.devices],
    }


_TYPES = set(DEVICE_TYPES.values())


def _opt_str(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def from_json(data: object) -> VulkanEnumeration:
    """Parse the worker's JSON; raises ValueError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    raw_devices = data.get("devices", [])
    if not isinstance(raw_devices, list):
        raise ValueError("'devices' must be a list")
    devices: list[VulkanDevice] = []
    for raw in raw_devices:
        if not isinstance(raw, dict):
            raise ValueError("each device must be an object")
        dtype = raw.get("device_type")
        if dtype not in _TYPES:
            raise ValueError(f"unknown device_type {dtype!r}")
        driver_id = raw.get("driver_id")
        devices.append(
            VulkanDevice(
                index=_int(raw.get("index")),
                name=_opt_str(raw.get("name")) or "",
                device_type=dtype,
                vendor_id=_int(raw.get("vendor_id")),
                device_id=_int(raw.get("device_id")),
                uuid=_opt_str(raw.get("uuid")),
                driver_name=_opt_str(raw.get("driver_name")),
                pci_bdf=_opt_str(raw.get("pci_bdf")),
                driver_id=None if driver_id is None else _int(driver_id),
                driver_info=_opt_str(raw.get("driver_info")),
                api_version=_opt_str(raw.get("api_version")),
                luid=_opt_str(raw.get("luid")),
            )
        )
    why = data.get("why")
    try:
        said = None if why is None else msgspec.convert(why, w.VulkanWhy)
    except msgspec.ValidationError as exc:
        raise ValueError(f"'why': {exc}") from None
    return VulkanEnumeration(
        devices=tuple(devices),
        why=said,
        instance_version=_opt_str(data.get("instance_version")),
    )


# --------------------------------------------------------------------------------------------------
# The parent side: run the worker in the job's environment.

DEFAULT_TIMEOUT_S = 20.0


def worker_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The job's environment, except that Python itself must find *our* gputray, not the job's packages."""
    merged = dict(os.environ if env is None else env)
    for var in ("PYTHONHOME", "PYTHONPATH"):
        merged.pop(var, None)
        if var in os.environ:
            merged[var] = os.environ[var]
    merged["PYTHONIOENCODING"] = "utf-8"
    return merged


PIPES_AFTER_EXIT_S = 2.0  # what the worker wrote before it exited is in its pipes: read at once


def _output_at_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[bytes, bytes] | None:
    """The worker's stdout and stderr once it has exited; None when it has not within ``timeout_s``.

    Read by threads, and not to the pipes' end: a process the worker started may inherit them and keep
    them open long after it exited (under Wine, the desktop process ``explorer.exe /desktop`` that the
    worker's first use of the X11 driver starts; a driver's helper daemon elsewhere). Waiting for their
    end, ``communicate`` reported such a worker as hung once its timeout ran out."""
    got: dict[int, list[bytes]] = {1: [], 2: []}

    def drain(pipe: IO[bytes], into: list[bytes]) -> None:
        # The thread keeps the pipe's file object: closed (by the garbage collector) while this read
        # waits, a Windows pipe handle's CloseHandle would wait for the read, and so would gputray.
        with contextlib.suppress(OSError, ValueError):
            while block := os.read(pipe.fileno(), 65536):
                into.append(block)

    pipes = {1: proc.stdout, 2: proc.stderr}
    readers = [
        threading.Thread(target=drain, args=(pipe, got[n]), daemon=True, name=f"vulkan pipe {n}")
        for n, pipe in pipes.items()
        if pipe is not None
    ]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    for reader in readers:
        reader.join(PIPES_AFTER_EXIT_S)
    return b"".join(got[1]), b"".join(got[2])


def enumerate_devices(
    env: Mapping[str, str] | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    python: str | None = None,
) -> VulkanEnumeration:
    """Enumerate Vulkan devices as a job started with ``env`` would see them. Never raises.

    The worker runs in its own process group (own session on POSIX) so a hung driver is killed with
    everything it started.
    """
    cmd = module_command(WORKER_MODULE, python=python)
    try:
        proc = popen_own_group(
            cmd,
            env=worker_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return VulkanEnumeration(why=w.WorkerNotStarted(program=cmd[0], error=str(exc)))
    try:
        said = _output_at_exit(proc, timeout_s)
    except BaseException:  # Ctrl+C: the worker is in its own group and would not get it
        kill_group(proc)
        raise
    if said is None:
        kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        return VulkanEnumeration(why=w.WorkerHung(timeout_s=timeout_s))
    out, err = said
    tail = tuple(err.decode("utf-8", errors="replace").strip().splitlines()[-3:])
    if proc.returncode != 0:
        if proc.returncode < 0:
            return VulkanEnumeration(why=w.WorkerDied(signal=-proc.returncode, stderr=tail))
        return VulkanEnumeration(why=w.WorkerDied(status=proc.returncode, stderr=tail))
    if not out.strip():
        list_mode = (env or os.environ).get("MESA_VK_DEVICE_SELECT", "").strip() == "list"
        return VulkanEnumeration(why=w.NoResult(list_mode=list_mode, stderr=tail))
    try:
        return from_json(json.loads(out.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        return VulkanEnumeration(why=w.UnreadableResult(error=str(exc), stderr=tail))
