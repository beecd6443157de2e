"""A GPU's hwmon folder: which files hold temperature, fans, power and its limit, found once per card.

Every DRM card's hwmon is read the same way, whatever its driver: an old Radeon on ``radeon`` reports its
core clock only here (``freq1_input``), nouveau its power, a virtual GPU nothing at all.

Units (``Documentation/hwmon/sysfs-interface.rst``): ``tempN_input`` m°C, ``fanN_input`` RPM, ``freqN_input``
Hz (``radeon``, amdgpu: ``sclk`` and ``mclk``),
``pwmN`` 0..``pwmN_max`` (255 when absent), ``powerN_input``/``_average`` µW, ``energyN_input`` µJ (a
counter: power is its rate between two samples), ``powerN_max``/``_cap``/``_crit`` µW limits.
Labels (``*_label``) name the sensors where a driver has several: amdgpu ``edge``/``junction``/``mem``,
xe ``pkg``/``vram`` temperatures and ``card``/``pkg`` power and energy.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from gputray.monitor.fdinfo import read_file_bytes
from gputray.monitor.records import plausible_power_max_w
from gputray.monitor.sysfs import int_of, text_of


def read_int(path: str | None) -> int | None:
    if path is None:
        return None
    return int_of(text_of(read_file_bytes(path, 4096)))


def listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


_FAN = re.compile(r"^fan\d+_input$")
_ENERGY = re.compile(r"^energy\d+_input$")


@dataclass(frozen=True)
class HwmonFiles:
    """The files of one hwmon folder worth reading each tick (full paths), or None for absent ones."""

    folder: str
    name: str | None
    temp_input: str | None
    temp_crit: str | None
    fan_inputs: tuple[str, ...]
    pwm: str | None
    pwm_max: str | None
    power_inputs: tuple[str, ...]
    energy_input: str | None
    power_limit: str | None
    freq_input: str | None = None  # the core clock (``sclk`` where labelled, else the lowest N)


def _labels(base: str, files: set[str]) -> dict[str, str | None]:
    return {
        name[: -len("_label")]: text_of(read_file_bytes(f"{base}/{name}", 256))
        for name in files
        if name.endswith("_label")
    }


def _pick(
    files: set[str], labels: dict[str, str | None], prefix: str, suffix: str, prefer: tuple[str, ...]
) -> str | None:
    """The ``<prefix>N<suffix>`` file whose label comes first in ``prefer``, else the lowest N.

    Exactly ``<prefix><digits><suffix>``: amdgpu's ``power1_cap_max`` is no ``powerN_max``.
    """
    pattern = re.compile(rf"^({re.escape(prefix)}(\d+)){re.escape(suffix)}$")
    matches = [m for m in map(pattern.match, files) if m is not None]
    sensors = [m.group(1) for m in sorted(matches, key=lambda m: int(m.group(2)))]
    for label in prefer:
        for sensor in sensors:
            if labels.get(sensor) == label:
                return sensor + suffix
    return sensors[0] + suffix if sensors else None


def find_hwmon(
    device_dir: str,
    *,
    temp_labels: tuple[str, ...] = ("edge", "pkg"),
    power_labels: tuple[str, ...] = ("card", "pkg"),
) -> HwmonFiles | None:
    """The first hwmon folder of a PCI device with files in it, and which of its files to read.

    A ``card`` energy counter that reads 0 (the B580 board has one that never moves) is passed over
    for the ``pkg`` one.
    """
    root = f"{device_dir}/hwmon"
    for hwmon in sorted(listdir(root)):
        base = f"{root}/{hwmon}"
        files = set(listdir(base))
        if not files:
            continue
        labels = _labels(base, files)
        temp = _pick(files, labels, "temp", "_input", temp_labels)
        temp_crit = temp.replace("_input", "_crit") if temp is not None else None
        fans = tuple(f"{base}/{n}" for n in sorted(files) if _FAN.match(n))
        pwm = "pwm1" if "pwm1" in files else None
        power_inputs = tuple(
            f"{base}/{n}"
            for n in (
                _pick(files, labels, "power", suffix, power_labels) for suffix in ("_average", "_input")
            )
            if n is not None
        )
        freq = _pick(files, labels, "freq", "_input", ("sclk", "gt"))
        energy = None
        for label in (*power_labels, None):
            candidates = [
                n for n in sorted(files) if _ENERGY.match(n) and labels.get(n[: -len("_input")]) == label
            ]
            moving = [n for n in candidates if (read_int(f"{base}/{n}") or 0) > 0]
            if moving:
                energy = moving[0]
                break
        limit = None
        for suffix in ("_max", "_cap", "_crit"):
            name = _pick(files, labels, "power", suffix, power_labels)
            if name is not None and (read_int(f"{base}/{name}") or 0) > 0:
                limit = name
                break
        return HwmonFiles(
            folder=base,
            name=text_of(read_file_bytes(f"{base}/name", 256)),
            temp_input=f"{base}/{temp}" if temp is not None else None,
            temp_crit=f"{base}/{temp_crit}" if temp_crit is not None and temp_crit in files else None,
            fan_inputs=fans,
            pwm=f"{base}/{pwm}" if pwm is not None else None,
            pwm_max=f"{base}/pwm1_max" if "pwm1_max" in files else None,
            power_inputs=power_inputs,
            energy_input=f"{base}/{energy}" if energy is not None else None,
            power_limit=f"{base}/{limit}" if limit is not None else None,
            freq_input=f"{base}/{freq}" if freq is not None else None,
        )
    return None


def temp_c(files: HwmonFiles | None) -> float | None:
    milli = read_int(files.temp_input) if files is not None else None
    return milli / 1000.0 if milli is not None else None


def fan(files: HwmonFiles | None) -> tuple[float | None, int | None]:
    """(% of full speed from ``pwm1``, RPM of the fastest fan). A stopped fan (zero-RPM idle) is 0."""
    if files is None:
        return None, None
    rpms = [r for r in (read_int(p) for p in files.fan_inputs) if r is not None and r >= 0]
    percent = None
    pwm = read_int(files.pwm)
    if pwm is not None:
        top = read_int(files.pwm_max) or 255
        if top > 0 and 0 <= pwm <= top:
            percent = round(100.0 * pwm / top, 1)
    return percent, (max(rpms) if rpms else None)


def power_w(files: HwmonFiles | None) -> float | None:
    if files is None:
        return None
    for path in files.power_inputs:
        micro = read_int(path)
        if micro is not None and micro >= 0:
            return micro / 1e6
    return None


def freq_mhz(files: HwmonFiles | None) -> int | None:
    """The core clock from ``freqN_input`` (Hz) in MHz; None without one, or a reading of 0 (a card
    that is off answers 0 rather than nothing)."""
    hz = read_int(files.freq_input) if files is not None else None
    return round(hz / 1e6) if hz is not None and hz > 0 else None


def power_limit_w(files: HwmonFiles | None) -> float | None:
    micro = read_int(files.power_limit) if files is not None else None
    return micro / 1e6 if micro is not None and micro > 0 else None


def energy_j(files: HwmonFiles | None) -> float | None:
    """The energy counter (``energyN_input``, µJ) in joules, or None without one."""
    micro = read_int(files.energy_input) if files is not None and files.energy_input else None
    return micro / 1e6 if micro is not None and micro >= 0 else None


class EnergyRate:
    """Power from an energy counter (µJ): its growth between two samples over the time between them.

    A counter that went back (it wrapped, the driver restarted) or grew faster than the device can draw
    (``records.plausible_power_max_w`` of its limit: a glitch that jumped it forward) gives no power for
    that interval, and the next is measured from the new reading; a negative or unreadable reading is
    no reference at all (before, one made the next interval's power absurd)."""

    def __init__(self) -> None:
        self._last: tuple[float, int] | None = None

    def update(self, now_s: float, micro_j: int | None, limit_w: float | None = None) -> float | None:
        if micro_j is None or micro_j < 0:
            return None
        last, self._last = self._last, (now_s, micro_j)
        if last is None or now_s <= last[0] or micro_j < last[1]:
            return None  # the first sample, or the counter wrapped or was reset
        rate = (micro_j - last[1]) / 1e6 / (now_s - last[0])
        return rate if rate <= plausible_power_max_w(limit_w) else None
