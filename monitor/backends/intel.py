"""Intel GPUs on Linux (``i915`` and ``xe``; integrated and Arc) through sysfs, hwmon and DRM fdinfo.

Neither driver has a ``gpu_busy_percent``: the load is what the DRM clients' fdinfo says they kept the
engines busy (``drm-engine-<class>`` ns on i915; ``drm-cycles-<class>`` over ``drm-total-cycles-<class>``
on xe), summed per engine class over the clients gputray can read, and the busiest class is the GPU's
load, as Task Manager and intel_gpu_top count it. Without root another user's clients are not
readable; on a desktop the GPU's clients are the user's own.

Clock: i915 ``cardN/gt_act_freq_mhz`` (else ``gt/gt0/rps_act_freq_mhz``), xe
``device/tile0/gt0/freq0/act_freq``; both read 0 while the GT sleeps in RC6, and then the clock it was
asked for (``gt_cur_freq_mhz`` / ``cur_freq``) is shown. hwmon exists on discrete cards (Arc) only:
temperature (xe ``pkg``, i915 ``temp1``), power as the rate of the energy counter between two
samples (µJ), the power limit (``powerN_max``, else ``_cap``, else ``_crit``), fan RPM. VRAM total is
xe's ``tile*/physical_vram_size_bytes`` where the kernel has it; VRAM in use is the sum of the readable
clients' resident VRAM. An integrated GPU has no memory of its own: what its clients hold is system
RAM, reported as shared memory (of the host's RAM). Intel's video engines encode and decode alike
(``vcs``/``video``), so fdinfo cannot split encoder from decoder load: both stay None.

Never wake a GPU: ``device/power/runtime_status`` is read first and a ``suspended`` card is reported
asleep with nothing else read (i915 and xe take a wakeref to read their GT attributes and hwmon).
``sys_dir`` is read as if it were ``/sys``; a captured ``/sys/class/drm`` (LACT layout) works too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from gputray.monitor import busy_why as why
from gputray.monitor import pcie
from gputray.monitor.backends import hwmon
from gputray.monitor.backends.drm import ASLEEP_REASON as ASLEEP_REASON  # the tests' name for it
from gputray.monitor.backends.drm import DrmBackend, read_uevent
from gputray.monitor.device_names import INTEL, PCI_IDS, friendly_name, known_integrated
from gputray.monitor.fdinfo import DrmUsageReader, ProcUsage, read_file_bytes
from gputray.monitor.records import (
    DeviceInfo,
    DeviceKind,
    ProcessKind,
    ProcessUse,
    Sample,
)
from gputray.monitor.sysfs import int_of, normalize_bdf, pci_key, text_of

BACKEND_NAME = "intel-sysfs"
DRIVERS = ("i915", "xe")


def _meminfo_total(proc_dir: Path) -> int | None:
    raw = text_of(read_file_bytes(f"{proc_dir}/meminfo", 4096))
    for line in (raw or "").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            value = int_of(parts[1]) if len(parts) >= 2 else None
            return value * 1024 if value is not None else None
    return None


@dataclass
class _Card:
    card: str
    card_dir: str
    device: str
    driver: str
    bdf: str | None
    key: str
    device_id: int | None
    info: DeviceInfo
    complete: bool = False
    freq_act: str | None = None
    freq_cur: str | None = None
    hw: hwmon.HwmonFiles | None = None
    energy: hwmon.EnergyRate | None = None
    link_dir: str | None = None
    link_max: tuple[int | None, int | None] = (None, None)


class IntelSysfsBackend(DrmBackend[_Card]):
    """The Backend for Intel GPUs on Linux; see the module docstring for what it reads and why."""

    name = BACKEND_NAME

    def __init__(
        self,
        sys_dir: Path = Path("/sys"),
        proc_dir: Path = Path("/proc"),
        *,
        processes: bool = True,
        usage: DrmUsageReader | None = None,
        pci_ids: tuple[Path, ...] = PCI_IDS,
    ) -> None:
        super().__init__(
            sys_dir, proc_dir, (usage or DrmUsageReader(proc_dir)) if processes else None, owns_usage=True
        )
        self._pci_ids = pci_ids

    # -- identity ------------------------------------------------------------------------------------

    def _identify(self, card_dir: str, card_name: str, known: _Card | None) -> _Card | None:
        device = f"{card_dir}/device"
        ident = read_uevent(f"{device}/uevent")
        driver = ident.get("DRIVER")
        if driver not in DRIVERS:
            return None
        vendor, _, dev = ident.get("PCI_ID", "").partition(":")
        vendor_id = int_of(f"0x{vendor}") if vendor else int_of(text_of(read_file_bytes(f"{device}/vendor")))
        if vendor_id != INTEL:
            return None
        device_id = int_of(f"0x{dev}") if dev else int_of(text_of(read_file_bytes(f"{device}/device")))
        bdf = normalize_bdf(ident.get("PCI_SLOT_NAME", "")) or normalize_bdf(
            os.path.basename(os.path.realpath(device))
        )
        key = pci_key(bdf) if bdf is not None else f"drm:{card_name}"
        if known is not None and known.key == key and known.device_id == device_id and known.driver == driver:
            return known
        integrated = known_integrated(INTEL, device_id) if device_id is not None else None
        if integrated is None:  # Intel's integrated GPU is always function 00:02.0
            integrated = bdf is not None and bdf.endswith(":00:02.0")
        info = DeviceInfo(
            key=key,
            name=friendly_name(INTEL, device_id, pci_ids=self._pci_ids)
            if device_id is not None
            else "Intel GPU",
            vendor="intel",
            kind="integrated" if integrated else "discrete",
            backend=BACKEND_NAME,
            pci_bdf=bdf,
            drm_card=card_name,
            pci_vendor_id=INTEL,
            pci_device_id=device_id,
        )
        return _Card(card_name, card_dir, device, driver, bdf, key, device_id, info)

    def _discover(self, card: _Card) -> None:
        """First look at an awake card: clock files, hwmon, link, memory totals, render node."""
        if card.driver == "xe":
            freq = f"{card.device}/tile0/gt0/freq0"
            card.freq_act, card.freq_cur = f"{freq}/act_freq", f"{freq}/cur_freq"
        else:
            act = f"{card.card_dir}/gt_act_freq_mhz"
            if not os.path.exists(act):
                act = f"{card.card_dir}/gt/gt0/rps_act_freq_mhz"
            card.freq_act, card.freq_cur = act, act.replace("act_freq", "cur_freq")
        card.hw = hwmon.find_hwmon(card.device, temp_labels=("pkg",))
        card.energy = hwmon.EnergyRate() if card.hw is not None and card.hw.energy_input else None
        kind: DeviceKind = card.info.kind
        vram_total = None
        if kind == "discrete":
            card.link_dir = pcie.link_folder(card.device, INTEL)
            card.link_max = pcie.read_max(card.link_dir)
            sizes = [
                hwmon.read_int(f"{card.device}/{tile}/physical_vram_size_bytes")
                for tile in sorted(hwmon.listdir(card.device))
                if tile.startswith("tile")
            ]
            known = [s for s in sizes if s is not None and s > 0]
            vram_total = sum(known) if known else None
        render = next(
            (n for n in sorted(hwmon.listdir(f"{card.device}/drm")) if n.startswith("renderD")), None
        )
        card.info = replace(
            card.info,
            vram_total_bytes=vram_total,
            shared_total_bytes=_meminfo_total(self.proc_dir) if kind == "integrated" else None,
            render_node=render,
        )

    # -- one sample ----------------------------------------------------------------------------------

    def _clock_mhz(self, card: _Card) -> int | None:
        act = hwmon.read_int(card.freq_act)
        if act is not None and act > 0:
            return act
        cur = hwmon.read_int(card.freq_cur)  # the GT sleeps (RC6): the clock it was asked for
        return cur if cur is not None and cur > 0 else act

    def _sample(self, card: _Card, usage: ProcUsage | None, now_s: float) -> Sample:
        info = card.info
        hw = card.hw
        power = hwmon.power_w(hw)
        if power is None and card.energy is not None and hw is not None:
            power = card.energy.update(now_s, hwmon.read_int(hw.energy_input), hwmon.power_limit_w(hw))
        util = vram_used = shared_used = None
        clients = usage.devices.get(card.bdf) if usage is not None and card.bdf is not None else None
        if usage is not None and usage.measured:
            if clients is None:
                util = 0.0  # no DRM client at all: nothing runs on it
            elif clients.engine_percent:
                util = round(max(clients.engine_percent.values()), 1)
        if clients is not None:
            vram_used = clients.vram_bytes if info.kind == "discrete" else None
            shared_used = clients.gtt_bytes
        elif usage is not None:
            vram_used = 0 if info.kind == "discrete" else None
            shared_used = 0
        fan_percent, fan_rpm = hwmon.fan(hw)
        link = pcie.link_fields(card.link_dir, card.link_max)
        temp = hwmon.temp_c(hw)
        read: tuple[tuple[why.Metric, float | None], ...] = (
            ("load", util),
            ("temperature", temp),
            ("power", power),
        )
        missing = tuple(label for label, value in read if value is None)
        reason = why.NotReported(metrics=missing) if missing else None
        return Sample(
            key=card.key,
            timestamp_s=now_s,
            reason=reason,
            util_percent=util,
            temp_c=temp,
            power_w=round(power, 2) if power is not None else None,
            vram_used_bytes=vram_used,
            vram_total_bytes=info.vram_total_bytes,
            shared_used_bytes=shared_used,
            shared_total_bytes=info.shared_total_bytes,
            sclk_mhz=self._clock_mhz(card) or hwmon.freq_mhz(hw),
            **link,
            fan_percent=fan_percent,
            fan_rpm=fan_rpm,
            power_limit_w=hwmon.power_limit_w(hw),
            energy_counter_j=hwmon.energy_j(hw),
        )

    # -- processes -----------------------------------------------------------------------------------

    def _processes(self, usage: ProcUsage) -> tuple[ProcessUse, ...]:
        by_bdf = {c.bdf: c for c in self._cards.values() if c.bdf is not None}
        uses: list[ProcessUse] = []
        for use in usage.drm:
            card = by_bdf.get(use.pdev) if use.pdev is not None else None
            if card is None or use.driver not in DRIVERS:
                continue
            kind: ProcessKind = (
                "mixed"
                if len(use.engines_used) == 2
                else "compute"
                if use.engines_used == ("compute",)
                else "graphics"
            )
            integrated = card.info.kind == "integrated"
            util = None  # the busiest engine class, video and copy included, as for the device
            if use.engine_percent is not None:
                util = max((pct for _, pct in use.engine_percent), default=0.0)
            uses.append(
                ProcessUse(
                    pid=use.pid,
                    name=use.name,
                    device=card.key,
                    kind=kind,
                    vram_bytes=None if integrated else use.vram_bytes,
                    shared_bytes=use.gtt_bytes,
                    util_percent=util,
                )
            )
        return tuple(uses)
