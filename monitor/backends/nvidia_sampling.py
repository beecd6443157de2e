"""The NVML backend's calls and readings: one NVML call with a lost or reset GPU turned into ``GpuGone``
(an optional metric into None), a GPU described from its handle, and its sample, extras and processes,
with the fallbacks older drivers and bindings need (memory v1, throttle reasons, process lists _v2).
``NvmlBackend`` (nvidia.py) takes them in as the mixin ``NvmlSampling`` and keeps when NVML is open
at all (sysfs, runtime PM, lost GPUs, letting a GPU sleep). Moved out of nvidia.py whole."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import psutil

from gputray.monitor import busy_why as why
from gputray.monitor.records import DeviceInfo, ProcessKind, ProcessUse, Sample
from gputray.monitor.sysfs import normalize_bdf, pci_key

log = logging.getLogger("gputray.monitor.backends.nvidia")

LOST_REASON = why.FellOffBus()
RESET_REASON = why.NeedsReset()

# Bit values are fixed by the NVML ABI (nvmlClocksEventReason* / nvmlClocksThrottleReason*).
# gpu_idle (0x1) is left out: an idle GPU is not being held back.
THROTTLE_REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)

_NOT_AVAILABLE_U64 = 2**64 - 1
#: The sample's fields NVML may not report, as the reason names them.
_METRICS: dict[str, why.Metric] = {
    "util_percent": "load",
    "temp_c": "temperature",
    "power_w": "power",
    "vram_used_bytes": "memory",
    "vram_total_bytes": "memory total",
    "sclk_mhz": "core clock",
    "mclk_mhz": "memory clock",
    "throttle": "throttle",
}


class NeverRaised(Exception):
    """Stands in for an exception class that the loaded pynvml does not define."""


class GpuGone(Exception):
    def __init__(self, reason: why.FellOffBus | why.NeedsReset) -> None:
        super().__init__(type(reason).__name__)
        self.reason = reason


@dataclass
class AttachedGpu:
    info: DeviceInfo
    handle: Any
    idle_since_s: float | None = None
    pcie_max: tuple[int | None, int | None] | None = None  # (gen, lanes) the GPU can do: asked once


def throttle_names(mask: int) -> tuple[str, ...]:
    """NVML clocks event / throttle reason bit mask → readable names (gpu_idle ignored)."""
    return tuple(name for bit, name in THROTTLE_REASON_BITS if mask & bit)


def friendly_name(nvml_name: str) -> str:
    """``NVIDIA GeForce RTX 5060 Ti`` → ``GeForce RTX 5060 Ti``."""
    name = nvml_name.strip()
    return name[len("NVIDIA ") :] if name.startswith("NVIDIA ") and len(name) > len("NVIDIA ") else name


def nvml_text(value: object) -> str | None:
    """NVML strings arrive as str (new bindings) or bytes (old bindings, ctypes char arrays)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return None
    value = value.replace("\x00", "").strip()
    return value or None


def _process_name(pid: int) -> str:
    try:
        return psutil.Process(pid).name() or f"pid {pid}"
    except (psutil.Error, OSError, ValueError):
        return f"pid {pid}"


class NvmlSampling:
    """NVML calls and readings; ``NvmlBackend`` is the one class that takes them in."""

    if TYPE_CHECKING:  # what the backend provides
        name: str
        _nvml: Any
        _known: dict[str, DeviceInfo]
        _memory_v2: bool
        _event_reasons_fn: str
        _process_suffix: str
        _nvml_error: type[BaseException]
        _lost_error: type[BaseException]
        _reset_error: type[BaseException]
        _mismatch_error: type[BaseException]

        def _exception_class(self, name: str) -> type[BaseException]: ...

    # ---------------------------------------------------------------- calls

    def _call(self, fn_name: str, *args: Any, **kwargs: Any) -> Any:
        """One NVML call: lost/reset → GpuGone; other NVML errors propagate."""
        fn = getattr(self._nvml, fn_name)
        try:
            return fn(*args, **kwargs)
        except self._lost_error as exc:
            raise GpuGone(LOST_REASON) from exc
        except self._reset_error as exc:
            raise GpuGone(RESET_REASON) from exc

    def _metric(self, fn_name: str, *args: Any, **kwargs: Any) -> Any:
        """One optional metric: unsupported, missing in old drivers or bindings, any NVML error → None."""
        if not hasattr(self._nvml, fn_name):
            return None
        try:
            return self._call(fn_name, *args, **kwargs)
        except (self._nvml_error, self._mismatch_error):
            return None

    def _const(self, name: str, default: int) -> int:
        value = getattr(self._nvml, name, default)
        return value if isinstance(value, int) else default

    def _is_error(self, exc: BaseException, name: str) -> bool:
        return isinstance(exc, self._exception_class(name))

    # ---------------------------------------------------------------- describing a GPU

    def _describe(self, handle: Any, bdf_hint: str | None, index: int | None) -> DeviceInfo:
        pci = self._metric("nvmlDeviceGetPciInfo", handle)
        bus_id = nvml_text(getattr(pci, "busId", None)) if pci is not None else None
        bdf = normalize_bdf(bus_id) if bus_id else None
        bdf = bdf or bdf_hint
        pci_ids = getattr(pci, "pciDeviceId", None) if pci is not None else None
        uuid = nvml_text(self._metric("nvmlDeviceGetUUID", handle))
        if index is None:
            raw_index = self._metric("nvmlDeviceGetIndex", handle)
            index = raw_index if isinstance(raw_index, int) else None
        key = pci_key(bdf) if bdf else f"nvml:{uuid or index}"
        raw_name = nvml_text(self._metric("nvmlDeviceGetName", handle))
        device_id = (pci_ids >> 16) & 0xFFFF if isinstance(pci_ids, int) else None
        name = friendly_name(raw_name) if raw_name else f"NVIDIA GPU [10de:{device_id or 0:04x}]"
        memory = self._memory(handle)
        limit = self._metric(
            "nvmlDeviceGetTemperatureThreshold",
            handle,
            self._const("NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1),
        )
        info = DeviceInfo(
            key=key,
            name=name,
            vendor="nvidia",
            kind="discrete",
            backend=self.name,
            pci_bdf=bdf,
            uuid=uuid,
            vram_total_bytes=memory[1] if memory is not None else None,
            nvml_index=index,
            pci_vendor_id=pci_ids & 0xFFFF if isinstance(pci_ids, int) else None,
            pci_device_id=device_id,
            temp_limit_c=float(limit) if isinstance(limit, int | float) and limit > 0 else None,
        )
        self._known[key] = info
        return info

    # ---------------------------------------------------------------- sampling

    def _memory(self, handle: Any) -> tuple[int, int] | None:
        """(used, total) bytes. Memory v2 excludes driver-reserved memory from ``used``; drivers older
        than the bindings lack it (FunctionNotFound / version mismatch) and v1 is used instead."""
        version = getattr(self._nvml, "nvmlMemory_v2", None)
        if self._memory_v2 and version is not None:
            try:
                mem = self._call("nvmlDeviceGetMemoryInfo", handle, version=version)
                return int(mem.used), int(mem.total)
            except self._nvml_error as exc:
                if not self._is_error(exc, "NVMLError_NotSupported"):
                    self._memory_v2 = False  # FunctionNotFound, ArgumentVersionMismatch...
                log.debug("memory info v2 unavailable: %s", exc)
            except TypeError:
                self._memory_v2 = False  # bindings without the version argument
        mem = self._metric("nvmlDeviceGetMemoryInfo", handle)
        if mem is None:
            return None
        return int(mem.used), int(mem.total)

    def _throttle(self, handle: Any) -> tuple[str, ...] | None:
        for fn_name in (self._event_reasons_fn, "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if not hasattr(self._nvml, fn_name):
                continue
            try:
                mask = self._call(fn_name, handle)
            except self._nvml_error as exc:
                if self._is_error(exc, "NVMLError_FunctionNotFound"):
                    self._event_reasons_fn = "nvmlDeviceGetCurrentClocksThrottleReasons"
                    continue
                return None
            return throttle_names(int(mask))
        return None

    def _int_metric(self, fn_name: str, *args: Any) -> int | None:
        value = self._metric(fn_name, *args)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    def _pcie_max(self, dev: AttachedGpu) -> tuple[int | None, int | None]:
        """What the GPU itself can do: ``GpuMax`` generation (``Max`` is capped by the slot: an eGPU on
        OCuLink would read "4.0 of 4.0"), and the widest link (as nvidia-smi's "Link Width Max")."""
        if dev.pcie_max is None:
            gen = self._int_metric("nvmlDeviceGetGpuMaxPcieLinkGeneration", dev.handle)
            if gen is None:
                gen = self._int_metric("nvmlDeviceGetMaxPcieLinkGeneration", dev.handle)
            dev.pcie_max = (gen, self._int_metric("nvmlDeviceGetMaxPcieLinkWidth", dev.handle))
        return dev.pcie_max

    def _utilization(self, fn_name: str, handle: Any) -> float | None:
        """Encoder/decoder utilisation: NVML returns [percent, sampling period µs]."""
        value = self._metric(fn_name, handle)
        if isinstance(value, list | tuple) and value and isinstance(value[0], int):
            return float(value[0]) if 0 <= value[0] <= 100 else None
        return None

    def _extras(self, dev: AttachedGpu) -> dict[str, Any]:
        """Link, fan, power limit, video engines: what eGPU users check. Each is None where the board
        does not report it (fans on a laptop GPU, RPM before driver 520...)."""
        handle = dev.handle
        max_gen, max_width = self._pcie_max(dev)
        fan = self._metric("nvmlDeviceGetFanSpeed", handle)
        limit_mw = self._metric("nvmlDeviceGetEnforcedPowerLimit", handle)
        return {
            "pcie_gen": self._int_metric("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            "pcie_width": self._int_metric("nvmlDeviceGetCurrPcieLinkWidth", handle),
            "pcie_max_gen": max_gen,
            "pcie_max_width": max_width,
            "fan_percent": float(fan) if isinstance(fan, int) and 0 <= fan <= 200 else None,
            "fan_rpm": self._int_metric("nvmlDeviceGetFanSpeedRPM", handle),
            "power_limit_w": limit_mw / 1000.0 if isinstance(limit_mw, int) and limit_mw > 0 else None,
            "encoder_percent": self._utilization("nvmlDeviceGetEncoderUtilization", handle),
            "decoder_percent": self._utilization("nvmlDeviceGetDecoderUtilization", handle),
        }

    def _sample(self, dev: AttachedGpu, now_s: float) -> Sample:
        handle = dev.handle
        util = self._metric("nvmlDeviceGetUtilizationRates", handle)
        temp = self._metric("nvmlDeviceGetTemperature", handle, self._const("NVML_TEMPERATURE_GPU", 0))
        power_mw = self._metric("nvmlDeviceGetPowerUsage", handle)
        memory = self._memory(handle)
        sclk = self._metric("nvmlDeviceGetClockInfo", handle, self._const("NVML_CLOCK_GRAPHICS", 0))
        mclk = self._metric("nvmlDeviceGetClockInfo", handle, self._const("NVML_CLOCK_MEM", 2))
        throttle = self._throttle(handle)
        values: dict[str, Any] = {
            "util_percent": float(util.gpu) if util is not None else None,
            "temp_c": float(temp) if isinstance(temp, int | float) else None,
            "power_w": power_mw / 1000.0 if isinstance(power_mw, int | float) else None,
            "vram_used_bytes": memory[0] if memory is not None else None,
            "vram_total_bytes": memory[1] if memory is not None else dev.info.vram_total_bytes,
            "sclk_mhz": int(sclk) if isinstance(sclk, int) else None,
            "mclk_mhz": int(mclk) if isinstance(mclk, int) else None,
            "throttle": throttle,
        }
        missing = tuple(_METRICS[name] for name, value in values.items() if value is None)
        reason = why.NotReported(metrics=missing, by="NVML") if missing else None
        values.update(self._extras(dev))
        energy_mj = self._metric("nvmlDeviceGetTotalEnergyConsumption", handle)  # since the driver loaded
        counter_ok = isinstance(energy_mj, int) and energy_mj >= 0
        values["energy_counter_j"] = energy_mj / 1000.0 if counter_ok else None
        if memory is not None and dev.info.vram_total_bytes != memory[1]:
            dev.info = replace(dev.info, vram_total_bytes=memory[1])
            self._known[dev.info.key] = dev.info
        return Sample(key=dev.info.key, timestamp_s=now_s, reason=reason, **values)

    def _process_list(self, handle: Any, which: str) -> list[Any]:
        """Compute or Graphics running processes. Drivers older than the bindings lack the _v3 call the
        unversioned wrapper uses (NVMLLibraryMismatchError / FunctionNotFound): fall back to _v2."""
        base = f"nvmlDeviceGet{which}RunningProcesses"
        for suffix in dict.fromkeys((self._process_suffix, "", "_v2")):
            fn_name = base + suffix
            if not hasattr(self._nvml, fn_name):
                continue
            try:
                procs = self._call(fn_name, handle)
            except self._mismatch_error:
                continue
            except self._nvml_error as exc:
                if self._is_error(exc, "NVMLError_FunctionNotFound"):
                    continue
                return []
            self._process_suffix = suffix
            return list(procs or [])
        return []

    def _processes(self, dev: AttachedGpu) -> list[ProcessUse]:
        merged: dict[int, tuple[set[str], int | None]] = {}
        for which, kind in (("Compute", "compute"), ("Graphics", "graphics")):
            for proc in self._process_list(dev.handle, which):
                pid = getattr(proc, "pid", None)
                if not isinstance(pid, int):
                    continue
                used = getattr(proc, "usedGpuMemory", None)
                vram = used if isinstance(used, int) and 0 <= used < _NOT_AVAILABLE_U64 else None
                kinds, prev = merged.get(pid, (set(), None))
                kinds.add(kind)
                if vram is not None:
                    prev = vram if prev is None else max(prev, vram)
                merged[pid] = (kinds, prev)
        out: list[ProcessUse] = []
        for pid, (kinds, vram) in sorted(merged.items()):
            proc_kind: ProcessKind = (
                "mixed" if len(kinds) > 1 else ("compute" if "compute" in kinds else "graphics")
            )
            out.append(
                ProcessUse(
                    pid=pid, name=_process_name(pid), device=dev.info.key, kind=proc_kind, vram_bytes=vram
                )
            )
        return out
