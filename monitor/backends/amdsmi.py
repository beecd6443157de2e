"""Optional AMD SMI backend: fills what sysfs lacks (UUID, ROCm processes' memory) where amdsmi exists.

``import amdsmi`` raises KeyError (not ImportError) when ``libamd_smi.so`` is missing and prints to
stdout on the way; the import is done here with stdout/stderr captured and every such error caught,
so a machine without ROCm sees nothing. amdsmi is often blind on consumer APUs
(``amdsmi_get_power_info`` fails without ``power1_cap``), so every call is separate and a failing
one costs its metric only. The monitor merges by device key with sysfs first, so these readings only
fill the fields sysfs left empty.

Never wake a GPU: amdsmi opens each GPU's device node and holds it, which resumes a runtime-suspended
GPU and keeps it from suspending again. So amdsmi is used only while no AMD GPU under ``sys_dir`` has
runtime power management enabled (``device/power/control`` = ``auto``); an APU such as the 780M has it
``on``. When one appears (an eGPU plugged in), amdsmi is shut down and its handles released.
amdsmi always sees this machine, so with a captured tree as ``sys_dir`` it stays off.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from gputray.monitor import busy_why as why
from gputray.monitor.device_names import AMD, friendly_name, known_integrated
from gputray.monitor.fdinfo import read_file_bytes
from gputray.monitor.records import BackendPoll, DeviceInfo, DeviceKind, DeviceReading, ProcessUse, Sample
from gputray.monitor.sysfs import normalize_bdf, pci_key
from gputray.monitor.units import MIB

log = logging.getLogger(__name__)

BACKEND_NAME = "amdsmi"
_IMPORT_ERRORS = (ImportError, OSError, KeyError, AttributeError)


def load_amdsmi() -> ModuleType | None:
    """``import amdsmi`` quietly; None when it is absent or broken (the normal case without ROCm)."""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            return importlib.import_module("amdsmi")
    except _IMPORT_ERRORS as exc:
        log.debug("amdsmi not usable: %r (%s)", exc, sink.getvalue().strip())
        return None


def _number(value: Any) -> float | None:
    """amdsmi returns numbers, "N/A" strings, or dicts with a ``value``; only a finite number counts."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        return None
    return float(value)


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


class AmdSmiBackend:
    """A Backend over the optional ``amdsmi`` Python package; see the module docstring."""

    name = BACKEND_NAME

    def __init__(self, sys_dir: Path = Path("/sys"), *, module: ModuleType | None = None) -> None:
        self.sys_dir = sys_dir
        self._module = module
        self._loaded = module is not None
        self._initialized = False
        self.unavailable_reason: why.SampleWhy | None = None

    # -- library lifetime ---------------------------------------------------------------------------

    def _lib(self) -> ModuleType | None:
        if not self._loaded:
            # amdsmi sees this machine's GPUs: with a captured tree as sys_dir it would mix them in
            reading_this_machine = os.path.realpath(self.sys_dir) == "/sys"
            self._module = load_amdsmi() if reading_this_machine else None
            self._loaded = True
        return self._module

    def _init(self, lib: ModuleType) -> bool:
        if self._initialized:
            return True
        try:
            flags = getattr(lib, "AmdSmiInitFlags", None)
            if flags is not None and hasattr(flags, "INIT_AMD_GPUS"):
                lib.amdsmi_init(flags.INIT_AMD_GPUS)
            else:
                lib.amdsmi_init()
        except Exception as exc:
            self.unavailable_reason = why.ApiStartFailed(api="amdsmi", error=str(exc))
            return False
        self._initialized = True
        self.unavailable_reason = None
        return True

    def close(self) -> None:
        if self._initialized and self._module is not None:
            with contextlib.suppress(Exception):
                self._module.amdsmi_shut_down()
        self._initialized = False

    def _runtime_pm_in_use(self) -> bool:
        """True when some AMD GPU may runtime-suspend, which amdsmi's held handles would prevent."""
        root = str(self.sys_dir)
        drm = f"{root}/class/drm"
        try:
            names = os.listdir(drm)
        except OSError:
            return False
        for name in names:
            if not name.startswith("card") or "-" in name:
                continue
            device = f"{drm}/{name}/device"
            uevent = read_file_bytes(f"{device}/uevent", 4096) or b""
            if b"DRIVER=amdgpu" not in uevent:
                continue
            control = (read_file_bytes(f"{device}/power/control", 64) or b"").strip(b"\x00\n ")
            if control == b"auto":
                return True
        return False

    # -- poll ---------------------------------------------------------------------------------------

    def poll(self, now_s: float) -> BackendPoll:
        try:
            return self._poll(now_s)
        except Exception:
            log.exception("amdsmi poll failed")
            return BackendPoll()

    def _poll(self, now_s: float) -> BackendPoll:
        lib = self._lib()
        if lib is None:
            return BackendPoll()
        if self._runtime_pm_in_use():
            if self._initialized:
                self.close()
            self.unavailable_reason = why.WouldWake()
            return BackendPoll()
        if not self._init(lib):
            return BackendPoll()
        try:
            handles = list(lib.amdsmi_get_processor_handles())
        except Exception as exc:
            self.unavailable_reason = why.NoHandles(api="amdsmi", error=str(exc))
            return BackendPoll()
        readings: list[DeviceReading] = []
        processes: list[ProcessUse] = []
        for handle in handles:
            reading = self._reading(lib, handle, now_s)
            if reading is None:
                continue
            readings.append(reading)
            processes.extend(self._processes(lib, handle, reading.info.key))
        return BackendPoll(readings=tuple(readings), processes=tuple(processes))

    @staticmethod
    def _call(lib: ModuleType, function: str, *args: Any) -> Any:
        try:
            return getattr(lib, function)(*args)
        except Exception as exc:  # amdsmi raises its own exception types; each costs one metric
            log.debug("%s failed: %r", function, exc)
            return None

    def _reading(self, lib: ModuleType, handle: Any, now_s: float) -> DeviceReading | None:
        bdf_text = self._call(lib, "amdsmi_get_gpu_device_bdf", handle)
        bdf = normalize_bdf(bdf_text) if isinstance(bdf_text, str) else None
        if bdf is None:
            return None
        key = pci_key(bdf)
        asic = self._call(lib, "amdsmi_get_gpu_asic_info", handle)
        asic = asic if isinstance(asic, dict) else {}
        device_id = _int(asic.get("device_id"))
        revision = _int(asic.get("rev_id"))
        compute_units = _int(asic.get("num_of_compute_units"))
        market = asic.get("market_name")
        target = asic.get("target_graphics_version")
        uuid = self._call(lib, "amdsmi_get_gpu_device_uuid", handle)
        vram = self._call(lib, "amdsmi_get_gpu_vram_usage", handle)
        vram = vram if isinstance(vram, dict) else {}
        vram_total_mib = _int(vram.get("vram_total"))
        vram_used_mib = _int(vram.get("vram_used"))
        integrated = known_integrated(AMD, device_id) if device_id is not None else None
        kind: DeviceKind = "integrated" if integrated else "discrete"
        info = DeviceInfo(
            key=key,
            name=friendly_name(
                AMD, device_id, revision=revision, compute_units=compute_units,
                fallback=market if isinstance(market, str) else None,
            )
            if device_id is not None
            else (market if isinstance(market, str) and market else "AMD GPU"),
            vendor="amd",
            kind=kind,
            backend=BACKEND_NAME,
            pci_bdf=bdf,
            uuid=uuid if isinstance(uuid, str) and uuid else None,
            vram_total_bytes=vram_total_mib * MIB if vram_total_mib is not None else None,
            gfx_target=target if isinstance(target, str) and target.startswith("gfx") else None,
            compute_units=compute_units,
            pci_vendor_id=AMD,
            pci_device_id=device_id,
        )  # fmt: skip
        return DeviceReading(info, self._sample(lib, handle, key, now_s, vram_used_mib, vram_total_mib))

    def _sample(
        self,
        lib: ModuleType,
        handle: Any,
        key: str,
        now_s: float,
        vram_used_mib: int | None,
        vram_total_mib: int | None,
    ) -> Sample:
        activity = self._call(lib, "amdsmi_get_gpu_activity", handle)
        util = _number(activity.get("gfx_activity")) if isinstance(activity, dict) else None
        temp_c = None
        temp_type = getattr(getattr(lib, "AmdSmiTemperatureType", None), "EDGE", None)
        temp_metric = getattr(getattr(lib, "AmdSmiTemperatureMetric", None), "CURRENT", None)
        if temp_type is not None and temp_metric is not None:
            temp_c = _number(self._call(lib, "amdsmi_get_temp_metric", handle, temp_type, temp_metric))
        power = self._call(lib, "amdsmi_get_power_info", handle)  # fails on APUs without power1_cap
        power_w = None
        if isinstance(power, dict):
            power_w = _number(power.get("average_socket_power"))
            if power_w is None:
                power_w = _number(power.get("current_socket_power"))
        sclk = None
        clk_type = getattr(getattr(lib, "AmdSmiClkType", None), "GFX", None)
        if clk_type is not None:
            clock = self._call(lib, "amdsmi_get_clock_info", handle, clk_type)
            sclk = _int(clock.get("clk")) if isinstance(clock, dict) else None
        return Sample(
            key=key,
            timestamp_s=now_s,
            util_percent=util if util is not None and util <= 100 else None,
            temp_c=temp_c,
            power_w=power_w,
            vram_used_bytes=vram_used_mib * MIB if vram_used_mib is not None else None,
            vram_total_bytes=vram_total_mib * MIB if vram_total_mib is not None else None,
            sclk_mhz=sclk,
        )

    def _processes(self, lib: ModuleType, handle: Any, key: str) -> list[ProcessUse]:
        """ROCm (KFD) processes with their memory: what DRM fdinfo cannot show."""
        listed = self._call(lib, "amdsmi_get_gpu_process_list", handle)
        uses = []
        for item in listed if isinstance(listed, list) else []:
            info = item
            if not isinstance(info, dict):  # older amdsmi: handles, resolved one by one
                info = self._call(lib, "amdsmi_get_gpu_process_info", handle, item)
            if not isinstance(info, dict):
                continue
            pid = _int(info.get("pid"))
            if pid is None or pid == 0:
                continue
            memory = info.get("memory_usage")
            memory = memory if isinstance(memory, dict) else {}
            vram = _int(memory.get("vram_mem"))
            if vram is None:
                vram = _int(info.get("mem"))
            name = info.get("name")
            uses.append(
                ProcessUse(
                    pid=pid,
                    name=name if isinstance(name, str) and name else f"pid {pid}",
                    device=key,
                    kind="rocm",
                    vram_bytes=vram,
                    shared_bytes=_int(memory.get("gtt_mem")),
                )
            )
        return uses
