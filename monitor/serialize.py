"""The ``gputray status --json`` document.

A device's ``reason`` and the backends' ``notes`` are codes (``busy_why``): the document gives their
words (``reason``, ``notes``: in English, as they always were) and beside them the code with its
arguments (``reason_code``, ``note_codes``) for scripts that match on them. The monitor does not word
its codes: the caller hands in ``words`` (``gputray.scheduler.reasons.render``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from gputray.monitor.busy_why import BackendNote, SampleWhy
from gputray.monitor.records import DeviceReading, HostSample, ProcessUse, Snapshot

#: How a caller words a code (``reasons.render``: English for the document).
Words = Callable[[SampleWhy | BackendNote], str]

DEVICE_FIELDS = (
    "key", "name", "vendor", "kind", "backend", "pci_bdf", "state", "reason", "reason_code", "util_percent",
    "temp_c",
    "power_w", "vram_used_bytes", "vram_total_bytes", "shared_used_bytes", "shared_total_bytes",
    "sclk_mhz", "mclk_mhz", "throttle", "pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width",
    "fan_percent", "fan_rpm", "power_limit_w", "encoder_percent", "decoder_percent",
)  # fmt: skip
SAMPLE_EXTRA_FIELDS = DEVICE_FIELDS[DEVICE_FIELDS.index("pcie_gen") :]
HOST_FIELDS = ("cpu_percent", "ram_used_bytes", "ram_total_bytes")
PROCESS_FIELDS = ("pid", "name", "device", "kind", "vram_bytes", "shared_bytes", "util_percent")


def code_json(code: SampleWhy | BackendNote | None) -> Any:
    """A code with its arguments as JSON (``{"code": "FellOffBus"}``); None for none."""
    return None if code is None else msgspec.to_builtins(code)


def device_to_json(reading: DeviceReading, words: Words) -> dict[str, Any]:
    info, s = reading.info, reading.sample
    return {
        "key": info.key,
        "name": info.name,
        "vendor": info.vendor,
        "kind": info.kind,
        "backend": info.backend,
        "pci_bdf": info.pci_bdf,
        "state": s.state,
        "reason": None if s.reason is None else words(s.reason),
        "reason_code": code_json(s.reason),
        "util_percent": s.util_percent,
        "temp_c": s.temp_c,
        "power_w": s.power_w,
        "vram_used_bytes": s.vram_used_bytes,
        "vram_total_bytes": s.vram_total_bytes if s.vram_total_bytes is not None else info.vram_total_bytes,
        "shared_used_bytes": s.shared_used_bytes,
        "shared_total_bytes": (
            s.shared_total_bytes if s.shared_total_bytes is not None else info.shared_total_bytes
        ),
        "sclk_mhz": s.sclk_mhz,
        "mclk_mhz": s.mclk_mhz,
        "throttle": None if s.throttle is None else list(s.throttle),
        **{name: getattr(s, name) for name in SAMPLE_EXTRA_FIELDS},
    }


def host_to_json(host: HostSample) -> dict[str, Any]:
    return {name: getattr(host, name) for name in HOST_FIELDS}


def process_to_json(proc: ProcessUse) -> dict[str, Any]:
    return {name: getattr(proc, name) for name in PROCESS_FIELDS}


def snapshot_to_json(snapshot: Snapshot, words: Words) -> dict[str, Any]:
    """``demo`` is true when the devices are simulated; ``notes`` say why a backend saw nothing."""
    return {
        "devices": [device_to_json(r, words) for r in snapshot.readings],
        "host": host_to_json(snapshot.host),
        "processes": [process_to_json(p) for p in snapshot.processes],
        "demo": snapshot.simulated,
        "notes": [words(n) for n in snapshot.notes],
        "note_codes": [code_json(n) for n in snapshot.notes],
    }
