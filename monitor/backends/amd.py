"""AMD GPUs on Linux through amdgpu's sysfs, hwmon, ``gpu_metrics`` and DRM fdinfo.

This is the primary path for the Radeon 780M: it needs no ROCm and no library, and it works on
captured trees. ``sys_dir`` is read as if it were ``/sys`` (the cards are ``sys_dir/class/drm/cardN``,
KFD's topology ``sys_dir/class/kfd/kfd/topology``) and ``proc_dir`` as if it were ``/proc``; that is what
``--sysfs-root`` and ``--proc-root`` mean. A captured ``/sys/class/drm`` folder as LACT stores it
(``cardN/`` and ``kfd/`` side by side) is accepted as ``sys_dir`` too.

Never wake a GPU: for each card ``device/power/runtime_status`` is read first, then ``device/uevent``
(the PCI core's cached identity; reading it does not touch the device). A ``suspended`` card is
reported ``asleep`` and nothing else of it is read: amdgpu's attributes and hwmon resume the device.

Units: hwmon temperatures are m°C, power µW, ``freqN_input`` Hz; ``mem_info_*`` bytes. On an APU
``mem_info_vram_*`` is the BIOS carve-out and ``mem_info_gtt_*`` the shared system memory (where most
of a job's memory lives), reported as ``shared_*``.

Processes come from DRM fdinfo (see ``fdinfo.py``) mapped by ``drm-pdev`` to the card's PCI address.
A process holding ``/dev/kfd`` is a ROCm user; when it also has a DRM client on an AMD GPU it is
listed there as ``rocm``, otherwise KFD does not say which GPU it uses and it is listed as ``rocm`` on
every AMD GPU that KFD exposes (on a 780M + NVIDIA machine: the 780M).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gputray.monitor import busy_why as why
from gputray.monitor import pcie
from gputray.monitor.backends import hwmon
from gputray.monitor.backends.drm import ASLEEP_REASON as ASLEEP_REASON  # the tests' name for it
from gputray.monitor.backends.drm import DrmBackend, uevent_fields
from gputray.monitor.backends.gpu_metrics import GpuMetrics, parse_gpu_metrics, residency_throttle
from gputray.monitor.device_map import KfdGpu, kfd_gpus
from gputray.monitor.device_names import AMD, AMDGPU_IDS, friendly_name, known_integrated
from gputray.monitor.fdinfo import DrmProcessUse, DrmUsageReader, ProcUsage, device_engine, read_file_bytes
from gputray.monitor.records import (
    BackendPoll,
    DeviceInfo,
    DeviceKind,
    DeviceReading,
    ProcessKind,
    ProcessUse,
    Sample,
)
from gputray.monitor.sysfs import int_of, normalize_bdf, pci_key, text_of
from gputray.monitor.units import GIB

BACKEND_NAME = "amdgpu-sysfs"
_LEVEL_RE = re.compile(rb"(\d+)\s*mhz", re.IGNORECASE)


def _read_int(path: str) -> int | None:
    return int_of(text_of(read_file_bytes(path, 4096)))


def _current_level_mhz(raw: bytes | None) -> int | None:
    """The level marked ``*`` in ``pp_dpm_sclk``/``pp_dpm_mclk`` (``1: 1100Mhz *``)."""
    if raw is None:
        return None
    for line in raw.replace(b"\x00", b"").split(b"\n"):
        if line.rstrip().endswith(b"*"):
            match = _LEVEL_RE.search(line)
            if match is not None:
                return int(match.group(1))
    return None


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


@dataclass
class _Card:
    """What stays true about one card while it stays on the bus: paths found once, identity."""

    card: str
    device: str  # ".../class/drm/cardN/device"
    bdf: str | None
    key: str
    vendor_id: int
    device_id: int | None
    info: DeviceInfo
    complete: bool = False  # False until discovered while awake
    temp_input: str | None = None
    temp_crit: str | None = None
    power_inputs: tuple[str, ...] = ()
    sclk_input: str | None = None
    mclk_input: str | None = None
    kfd_exposed: bool = False
    last_metrics: GpuMetrics | None = field(default=None, repr=False)
    hw: hwmon.HwmonFiles | None = None  # fans, power limit
    link_dir: str | None = None  # whose link files describe the link to the host (None: integrated)
    link_max: tuple[int | None, int | None] = (None, None)


class AmdSysfsBackend(DrmBackend[_Card]):
    """The Backend for AMD GPUs on Linux; see the module docstring for what it reads and why."""

    name = BACKEND_NAME

    def __init__(
        self,
        sys_dir: Path = Path("/sys"),
        proc_dir: Path = Path("/proc"),
        *,
        processes: bool = True,
        amdgpu_ids: Path | None = AMDGPU_IDS,
        usage: DrmUsageReader | None = None,
    ) -> None:
        """``usage``: the DRM process reader shared with the other Linux DRM backends (one walk of
        /proc per tick for all of them); by default this backend has its own."""
        super().__init__(
            sys_dir, proc_dir, (usage or DrmUsageReader(proc_dir)) if processes else None, owns_usage=True
        )
        self._amdgpu_ids = amdgpu_ids
        self._records: dict[tuple[DrmProcessUse, str], ProcessUse] = {}

    def _finish(self, readings: Sequence[DeviceReading], usage: ProcUsage | None) -> BackendPoll:
        if usage is None:
            return BackendPoll(readings=tuple(readings))
        video = tuple(self._with_video(r, usage) for r in readings)
        return BackendPoll(readings=video, processes=self._processes(usage))

    def _with_video(self, reading: DeviceReading, usage: ProcUsage) -> DeviceReading:
        """VCN encode/decode load of the card: its clients' ``enc*``/``dec*`` engines (fdinfo)."""
        if reading.sample.state != "ok" or reading.info.pci_bdf is None:
            return reading
        enc = device_engine(usage, reading.info.pci_bdf, ("enc",))
        dec = device_engine(usage, reading.info.pci_bdf, ("dec",))
        if enc is None and dec is None:
            return reading
        return DeviceReading(reading.info, replace(reading.sample, encoder_percent=enc, decoder_percent=dec))

    # -- identity ------------------------------------------------------------------------------------

    def _identify(self, card_dir: str, card_name: str, known: _Card | None) -> _Card | None:
        device = f"{card_dir}/device"
        ident = uevent_fields(read_file_bytes(f"{device}/uevent", 4096))
        if not ident and text_of(read_file_bytes(f"{device}/power/runtime_status", 64)) is None:
            return None  # gone (or not a device at all)
        driver = ident.get("DRIVER")
        if driver is not None and driver != "amdgpu":
            return None
        vendor_id, device_id = self._pci_ids(ident, device)
        if vendor_id != AMD:
            return None
        bdf = normalize_bdf(ident.get("PCI_SLOT_NAME", "")) or normalize_bdf(
            os.path.basename(os.path.realpath(device))
        )
        key = pci_key(bdf) if bdf is not None else f"drm:{card_name}"
        if known is not None and known.key == key and known.device_id == device_id:
            return known
        return self._new_card(card_name, device, bdf, key, vendor_id, device_id)

    @staticmethod
    def _pci_ids(ident: dict[str, str], device: str) -> tuple[int | None, int | None]:
        vendor, _, dev = ident.get("PCI_ID", "").partition(":")
        try:
            return int(vendor, 16), int(dev, 16)
        except ValueError:
            return _read_int(f"{device}/vendor"), _read_int(f"{device}/device")

    def _name(
        self, device_id: int | None, revision: int | None, compute_units: int | None, product: str | None
    ) -> str:
        if device_id is None:
            return product or "AMD GPU"
        return friendly_name(
            AMD,
            device_id,
            revision=revision,
            compute_units=compute_units,
            fallback=product,
            ids_path=self._amdgpu_ids,
        )

    def _new_card(
        self, card_name: str, device: str, bdf: str | None, key: str, vendor_id: int, device_id: int | None
    ) -> _Card:
        """A card seen for the first time: identity only, nothing that could wake it."""
        integrated = known_integrated(vendor_id, device_id) if device_id is not None else None
        # A runtime-suspended AMD GPU is in practice a dGPU: APUs do not runtime-suspend.
        kind: DeviceKind = "integrated" if integrated else "discrete"
        info = DeviceInfo(
            key=key,
            name=self._name(device_id, None, None, None),
            vendor="amd",
            kind=kind,
            backend=BACKEND_NAME,
            pci_bdf=bdf,
            drm_card=card_name,
            pci_vendor_id=vendor_id,
            pci_device_id=device_id,
        )
        return _Card(card_name, device, bdf, key, vendor_id, device_id, info)

    def _discover(self, card: _Card) -> None:
        """First look at an awake card: hwmon files, KFD node, totals, name and kind."""
        device = card.device
        metrics = parse_gpu_metrics(read_file_bytes(f"{device}/gpu_metrics"))
        self._find_hwmon(card)
        card.hw = hwmon.find_hwmon(device)
        node = next((gpu for gpu in kfd_gpus(self.sys_dir) if gpu.key == card.key), None)
        card.kfd_exposed = node is not None
        render = next((n for n in sorted(_listdir(f"{device}/drm")) if n.startswith("renderD")), None)
        if render is None and node is not None:
            render = node.render_node
        revision = _read_int(f"{device}/revision")
        product = text_of(read_file_bytes(f"{device}/product_name", 4096))
        vram_total = _read_int(f"{device}/mem_info_vram_total")
        gtt_total = _read_int(f"{device}/mem_info_gtt_total")
        compute_units = node.compute_units if node is not None else None
        kind = _kind(card, metrics, node, vram_total)
        temp_limit = None
        if kind == "discrete" and card.temp_crit is not None:
            crit = _read_int(card.temp_crit)
            if crit is not None and 0 < crit < 200_000:
                temp_limit = crit / 1000.0
        card.info = DeviceInfo(
            key=card.key,
            name=self._name(card.device_id, revision, compute_units, product),
            vendor="amd",
            kind=kind,
            backend=BACKEND_NAME,
            pci_bdf=card.bdf,
            vram_total_bytes=vram_total,
            shared_total_bytes=gtt_total,
            drm_card=card.card,
            render_node=render,
            gfx_target=node.gfx_target if node is not None else None,
            compute_units=compute_units,
            pci_vendor_id=card.vendor_id,
            pci_device_id=card.device_id,
            temp_limit_c=temp_limit,
        )
        if kind == "discrete":  # an APU's link files describe its on-die fabric, no PCIe link
            card.link_dir = pcie.link_folder(device, card.vendor_id)
            card.link_max = pcie.read_max(card.link_dir)

    @staticmethod
    def _find_hwmon(card: _Card) -> None:
        hwmon_root = f"{card.device}/hwmon"
        for folder in sorted(_listdir(hwmon_root)):
            base = f"{hwmon_root}/{folder}"
            files = set(_listdir(base))
            if not files:
                continue
            labels = {
                name[: -len("_label")]: text_of(read_file_bytes(f"{base}/{name}", 256))
                for name in files
                if name.endswith("_label") and (name.startswith("temp") or name.startswith("freq"))
            }
            temp = next((s for s, label in labels.items() if s.startswith("temp") and label == "edge"), None)
            if temp is None and "temp1_input" in files:
                temp = "temp1"
            if temp is not None and f"{temp}_input" in files:
                card.temp_input = f"{base}/{temp}_input"
                if f"{temp}_crit" in files:
                    card.temp_crit = f"{base}/{temp}_crit"
            card.power_inputs = tuple(
                f"{base}/{name}" for name in ("power1_average", "power1_input") if name in files
            )
            for sensor, label in labels.items():
                if sensor.startswith("freq") and f"{sensor}_input" in files:
                    if label == "sclk":
                        card.sclk_input = f"{base}/{sensor}_input"
                    elif label == "mclk":
                        card.mclk_input = f"{base}/{sensor}_input"
            return

    def _sample(self, card: _Card, usage: ProcUsage | None, now_s: float) -> Sample | None:
        metrics = parse_gpu_metrics(read_file_bytes(f"{card.device}/gpu_metrics"))
        sample = self._sample_of(card, metrics, now_s)
        card.last_metrics = metrics
        return sample

    def _sample_of(self, card: _Card, metrics: GpuMetrics | None, now_s: float) -> Sample | None:
        device = card.device
        util_raw = _read_int(f"{device}/gpu_busy_percent")
        util = float(util_raw) if util_raw is not None and 0 <= util_raw <= 100 else None
        temp_c = None
        if card.temp_input is not None:
            milli = _read_int(card.temp_input)
            temp_c = milli / 1000.0 if milli is not None else None
        power_w = None
        for path in card.power_inputs:
            micro = _read_int(path)
            if micro is not None and micro >= 0:
                power_w = micro / 1e6
                break
        vram_used = _read_int(f"{device}/mem_info_vram_used")
        gtt_used = _read_int(f"{device}/mem_info_gtt_used")
        sclk = _current_level_mhz(read_file_bytes(f"{device}/pp_dpm_sclk", 4096))
        if sclk is None and card.sclk_input is not None:
            hz = _read_int(card.sclk_input)
            sclk = round(hz / 1e6) if hz is not None else None
        mclk = _current_level_mhz(read_file_bytes(f"{device}/pp_dpm_mclk", 4096))
        if mclk is None and card.mclk_input is not None:
            hz = _read_int(card.mclk_input)
            mclk = round(hz / 1e6) if hz is not None else None
        throttle: tuple[str, ...] | None = None
        if metrics is not None:
            util = util if util is not None else metrics.gfx_activity_percent
            temp_c = temp_c if temp_c is not None else metrics.temp_c
            power_w = power_w if power_w is not None else metrics.socket_power_w
            sclk = sclk if sclk is not None else metrics.gfxclk_mhz
            mclk = mclk if mclk is not None else metrics.uclk_mhz
            throttle = metrics.throttle_reasons()
            if throttle is None:
                throttle = residency_throttle(card.last_metrics, metrics)
        values = (util, temp_c, power_w, vram_used, gtt_used, sclk, mclk)
        if all(v is None for v in values) and not os.path.isdir(device):
            return None  # the card went away while being read
        fan_percent, fan_rpm = hwmon.fan(card.hw)
        link = pcie.link_fields(card.link_dir, card.link_max)
        read: tuple[tuple[why.Metric, float | None], ...] = (
            ("load", util),
            ("temperature", temp_c),
            ("power", power_w),
        )
        missing = tuple(label for label, value in read if value is None)
        return Sample(
            key=card.key,
            timestamp_s=now_s,
            reason=why.NotReported(metrics=missing) if missing else None,
            util_percent=util,
            temp_c=temp_c,
            power_w=power_w,
            vram_used_bytes=vram_used,
            vram_total_bytes=card.info.vram_total_bytes,  # read once by _discover: totals do not change
            shared_used_bytes=gtt_used,
            shared_total_bytes=card.info.shared_total_bytes,
            sclk_mhz=sclk,
            mclk_mhz=mclk,
            throttle=throttle,
            **link,
            fan_percent=fan_percent,
            fan_rpm=fan_rpm,
            power_limit_w=hwmon.power_limit_w(card.hw),
            energy_counter_j=hwmon.energy_j(card.hw),
        )

    # -- processes ----------------------------------------------------------------------------------

    def _processes(self, usage: ProcUsage) -> tuple[ProcessUse, ...]:
        by_bdf = {c.bdf: c.key for c in self._cards.values() if c.bdf is not None}
        amd_keys = [c.key for c in sorted(self._cards.values(), key=lambda c: c.key)]
        uses: list[ProcessUse] = []
        placed: set[int] = set()
        previous = self._records
        records: dict[tuple[DrmProcessUse, str], ProcessUse] = {}
        self._records = records
        for use in usage.drm:
            key = by_bdf.get(use.pdev) if use.pdev is not None else None
            if key is None and use.pdev is None and use.driver == "amdgpu" and len(amd_keys) == 1:
                key = amd_keys[0]
            if key is None:
                continue
            record = previous.get((use, key))  # an unchanged process: last poll's record again
            if record is None:
                record = ProcessUse(
                    pid=use.pid,
                    name=use.name,
                    device=key,
                    kind=_process_kind(use),
                    vram_bytes=use.vram_bytes,
                    shared_bytes=use.gtt_bytes,
                    util_percent=use.util_percent,
                )
            records[use, key] = record
            uses.append(record)
            if use.holds_kfd:
                placed.add(use.pid)
        kfd_keys = [c.key for c in sorted(self._cards.values(), key=lambda c: c.key) if c.kfd_exposed]
        targets = kfd_keys or amd_keys
        for pid, name in usage.kfd:
            if pid in placed:
                continue
            uses.extend(ProcessUse(pid=pid, name=name, device=key, kind="rocm") for key in targets)
        return tuple(uses)


def _process_kind(use: DrmProcessUse) -> ProcessKind:
    if use.holds_kfd:
        return "rocm"
    gfx = "gfx" in use.engines_used
    compute = "compute" in use.engines_used
    if gfx and compute:
        return "mixed"
    return "compute" if compute else "graphics"


def _kind(card: _Card, metrics: GpuMetrics | None, node: KfdGpu | None, vram_total: int | None) -> DeviceKind:
    """Integrated or discrete: the id table, else the gpu_metrics layout, else KFD, else the VRAM size."""
    if card.device_id is not None:
        known = known_integrated(card.vendor_id, card.device_id)
        if known is not None:
            return "integrated" if known else "discrete"
    if metrics is not None:
        return "integrated" if metrics.is_apu else "discrete"
    if node is not None and node.integrated is not None:
        return "integrated" if node.integrated else "discrete"
    if vram_total is not None:
        return "integrated" if vram_total < GIB else "discrete"
    return "discrete"
